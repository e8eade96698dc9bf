package setup

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gyrum-labs/warp/internal/agent"
)

// The markers around the instructions block setup writes into an agent's
// instructions file (CLAUDE.md, AGENTS.md, GEMINI.md). HTML comments, so
// rendered Markdown does not show them; the agent reads them as they are.
const (
	InstructionsBegin = "<!-- gyrum:begin (written by `gyrum setup --instructions`; edit outside these markers, or remove with --uninstall) -->"
	InstructionsEnd   = "<!-- gyrum:end -->"
)

// instructionsBeginPrefix finds the begin marker of any gyrum version.
const instructionsBeginPrefix = "<!-- gyrum:begin"

// Instructions is the snippet that tells an agent how to work with gyrum
// leases: claim, finish, wait, and what to do when a lease ends. It is
// what `gyrum setup --instructions` prints, and what it puts between the
// markers of a file.
func Instructions() string {
	var tools []string
	for _, a := range agent.All() {
		if a.ShellTool != "" {
			tools = append(tools, a.Title+": "+a.ShellTool)
		}
	}
	return `## Tickets and leases (gyrum)

Work on a ticket only while you hold its lease. The lease lives while your
tool calls show progress; gyrum's hook and heartbeat loop keep it. Run the
gyrum commands below with your shell tool (` + wrap(strings.Join(tools, "; "), 33, 74) + `).

- Claim before you start, from the project directory:
  ` + "`gyrum start-work TICKET`" + `, or ` + "`gyrum start-work --next`" + ` for the oldest
  open ticket (add ` + "`--worktree`" + ` for a worktree of its own, and work there).
  It prints what earlier attempts at the ticket did (all of it in
  .gyrum/handoff.json): read it before you start, and with
  ` + "`--worktree --resume`" + ` start from the last attempt's saved work.
- Leave a note when you change course and before you release:
  ` + "`gyrum note \"tried X: fails on Y; next: Z\"`" + ` (at most 1 KiB). The next
  agent that takes the ticket is shown it.
- Done: ` + "`gyrum complete-pr --pr URL`" + ` once the pull request is up; to give
  the ticket back unfinished: ` + "`gyrum release`" + `.
- A tool call that itself waits (a long command, an MCP tool waiting on a
  remote service, a subagent) counts for as long as it runs, and so do
  builds and tests on this host: nothing to declare. A wait that no tool
  call covers (you stop to wait for a CI run or a review and check back
  later): declare it first, ` + "`gyrum wait --for 45m --reason \"CI queue\"`" + `, and
  run ` + "`gyrum wait --done`" + ` when it is over.
- If you are told that your lease on a ticket ended (lapsed, released,
  taken over, completed elsewhere): stop working on that ticket at once —
  no commit, push or pull request for it; run ` + "`gyrum status`" + `; clean up
  with ` + "`gyrum release --dir D`" + ` (D: that ticket's worktree); claim it again
  only if it is still open and the work is still wanted.
`
}

// wrap breaks s at spaces into lines of at most width bytes, the first
// of at most first (it follows text on its line).
func wrap(s string, first, width int) string {
	var b strings.Builder
	room := first
	for i, w := range strings.Fields(s) {
		switch {
		case i == 0:
		case len(w)+1 > room:
			b.WriteByte('\n')
			room = width
		default:
			b.WriteByte(' ')
			room--
		}
		b.WriteString(w)
		room -= len(w)
	}
	return b.String()
}

// instructionsBlock is the marked block, ending in a newline.
func instructionsBlock() string {
	return InstructionsBegin + "\n" + Instructions() + InstructionsEnd + "\n"
}

// MarkerError reports an instructions file whose gyrum markers setup
// cannot make sense of (a begin without an end, two blocks). The file is
// left as it was.
type MarkerError struct {
	Path string
	Line int
	Msg  string
}

func (e *MarkerError) Error() string {
	return fmt.Sprintf("%s:%d: %s (file left unchanged; fix the markers by hand and run again)", e.Path, e.Line, e.Msg)
}

// findBlock returns the byte range [start, end) of the gyrum block of data:
// from the start of its begin-marker line to the end of its end-marker line
// (past the newline). found is false when there is none.
func findBlock(path string, data []byte) (start, end int, found bool, err error) {
	start, end = -1, -1
	beginLine := 0
	off := 0
	for i, line := range splitLines(string(data)) {
		text := strings.TrimSpace(strings.TrimRight(line, "\r\n"))
		switch {
		case strings.HasPrefix(text, instructionsBeginPrefix):
			if start >= 0 {
				return 0, 0, false, &MarkerError{Path: path, Line: i + 1, Msg: fmt.Sprintf("a second gyrum:begin marker (the first is on line %d); keep one gyrum block", beginLine)}
			}
			start, beginLine = off, i+1
		case text == InstructionsEnd:
			if start < 0 {
				return 0, 0, false, &MarkerError{Path: path, Line: i + 1, Msg: "a gyrum:end marker without a gyrum:begin before it"}
			}
			if end >= 0 {
				return 0, 0, false, &MarkerError{Path: path, Line: i + 1, Msg: "a second gyrum:end marker; keep one gyrum block"}
			}
			end = off + len(line)
		}
		off += len(line)
	}
	if start >= 0 && end < 0 {
		return 0, 0, false, &MarkerError{Path: path, Line: beginLine, Msg: "a gyrum:begin marker without a gyrum:end after it"}
	}
	return start, end, start >= 0, nil
}

// installInstructions returns data with the gyrum block: replaced in place
// when there is one (an older text), else appended after a blank line.
// changed is false, and data returned as it is, when the block is current.
func installInstructions(path string, data []byte) ([]byte, bool, error) {
	start, end, found, err := findBlock(path, data)
	if err != nil {
		return nil, false, err
	}
	block := []byte(instructionsBlock())
	if found {
		if bytes.Equal(data[start:end], block) {
			return data, false, nil
		}
		out := append(append(append([]byte(nil), data[:start]...), block...), data[end:]...)
		return out, true, nil
	}
	out := append([]byte(nil), data...)
	switch {
	case len(out) == 0:
	case out[len(out)-1] == '\n':
		out = append(out, '\n')
	default:
		out = append(out, '\n', '\n')
	}
	return append(out, block...), true, nil
}

// uninstallInstructions removes the gyrum block and the blank line before
// it that installInstructions added, so a file that ended in a newline
// comes back byte for byte.
func uninstallInstructions(path string, data []byte) ([]byte, bool, error) {
	start, end, found, err := findBlock(path, data)
	if err != nil {
		return nil, false, err
	}
	if !found {
		return data, false, nil
	}
	before := data[:start]
	if end == len(data) && bytes.HasSuffix(before, []byte("\n\n")) {
		before = before[:len(before)-1] // the blank line the append added
	}
	out := append(append([]byte(nil), before...), data[end:]...)
	return out, true, nil
}

// InstructionsOptions configures RunInstructions.
type InstructionsOptions struct {
	// Path is the instructions file (CLAUDE.md, AGENTS.md, ...); it is
	// created when missing.
	Path string
	// Uninstall removes the block instead (and the file, when nothing else
	// is left in it).
	Uninstall bool
	// DryRun prints the diff and changes nothing.
	DryRun bool
	// Out receives one line (with DryRun: the diff); nil → io.Discard.
	Out io.Writer
}

// RunInstructions puts the gyrum block into o.Path once, or updates it
// there, or with Uninstall removes it. The rest of the file is kept byte
// for byte; the write is atomic, keeps the file's permissions and follows
// a symlink. A file whose markers are broken is refused with a
// *MarkerError and not touched. changed reports whether the file was (or
// with DryRun would be) changed.
func RunInstructions(_ context.Context, o InstructionsOptions) (changed bool, err error) {
	if o.Out == nil {
		o.Out = io.Discard
	}
	old, existed, err := readFile(o.Path)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", o.Path, err)
	}
	var data []byte
	if o.Uninstall {
		if !existed {
			fmt.Fprintf(o.Out, "%s does not exist: no gyrum instructions to remove\n", o.Path)
			return false, nil
		}
		data, changed, err = uninstallInstructions(o.Path, old)
	} else {
		data, changed, err = installInstructions(o.Path, old)
	}
	if err != nil {
		return false, err
	}
	if !changed {
		if o.Uninstall {
			fmt.Fprintf(o.Out, "nothing to change: %s has no gyrum instructions\n", o.Path)
		} else {
			fmt.Fprintf(o.Out, "nothing to change: %s already has the gyrum instructions\n", o.Path)
		}
		return false, nil
	}
	// A file that held nothing but our block was ours: remove it.
	remove := o.Uninstall && len(bytes.TrimSpace(data)) == 0
	verb := "update"
	switch {
	case !existed:
		verb = "create"
	case remove:
		verb = "remove"
	}
	what := "add the gyrum instructions"
	if o.Uninstall {
		what = "remove the gyrum instructions"
	}
	if o.DryRun {
		fmt.Fprintf(o.Out, "would %s %s: %s\n", verb, o.Path, what)
		newData := data
		if remove {
			newData = nil
		}
		fmt.Fprint(o.Out, indentText(unifiedDiff(o.Path, old, newData, existed), "    "))
		fmt.Fprintln(o.Out, "dry run: nothing was changed")
		return true, nil
	}
	if err := writeInstructions(o.Path, old, data, existed, remove); err != nil {
		return false, err
	}
	fmt.Fprintln(o.Out, pastTense(fmt.Sprintf("%s %s: %s", verb, o.Path, what)))
	return true, nil
}

// writeInstructions writes data to path (old as read, existed whether it
// was there), or removes the file when remove — only while it is still
// what was read: never a file someone wrote to meanwhile.
func writeInstructions(path string, old, data []byte, existed, remove bool) error {
	if !remove {
		edit := fileEdit{Path: path, Old: old, New: data, Existed: existed, Perm: 0o644}
		_, err := edit.apply(time.Time{})
		return err
	}
	if now, _, err := readFile(path); err != nil || !bytes.Equal(now, old) {
		return fmt.Errorf("%s changed while setup ran; run it again", path)
	}
	return os.Remove(path)
}
