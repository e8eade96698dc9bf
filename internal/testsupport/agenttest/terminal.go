package agenttest

import (
	"bytes"
	"io"
	"os"
	"os/exec"

	"github.com/gyrum-labs/warp/internal/shellquote"
)

// onTerminal returns the command that runs bin with args on a terminal of
// its own: `script -qfec CMD /dev/null` (util-linux), the pty sized 40x120
// before the CLI starts (a pty starts at 0x0).
func onTerminal(bin string, args []string) *exec.Cmd {
	line := "stty rows 40 cols 120; exec " + shellquote.Quote(bin)
	for _, a := range args {
		line += " " + shellquote.Quote(a)
	}
	return exec.Command("script", "-qfec", line, os.DevNull)
}

// terminalAnswers are what a terminal answers to the queries a TUI sends
// at start: cursor position (CSI 6n), primary device attributes (CSI c),
// the foreground and background colours (OSC 10/11 ?), the keyboard
// protocol (CSI ? u).
var terminalAnswers = []struct{ query, answer string }{
	{"\x1b[6n", "\x1b[1;1R"},
	{"\x1b[c", "\x1b[?62;22c"},
	{"\x1b]10;?", "\x1b]10;rgb:ffff/ffff/ffff\x1b\\"},
	{"\x1b]11;?", "\x1b]11;rgb:0000/0000/0000\x1b\\"},
	{"\x1b[?u", "\x1b[?0u"},
}

// answerTerminal copies a TUI's output to out and writes the answer to
// every terminal query in it to in, until the output ends: a TUI waits for
// those answers before it draws.
func answerTerminal(r io.ReadCloser, out, in *os.File) {
	defer r.Close()
	defer out.Close()
	buf := make([]byte, 32<<10)
	var tail []byte
	for {
		n, err := r.Read(buf)
		if n > 0 {
			_, _ = out.Write(buf[:n])
			seen := append(tail, buf[:n]...)
			for _, qa := range terminalAnswers {
				for i := bytes.Index(seen, []byte(qa.query)); i >= 0; {
					_, _ = in.Write([]byte(qa.answer))
					seen = append(seen[:i:i], seen[i+len(qa.query):]...)
					i = bytes.Index(seen, []byte(qa.query))
				}
			}
			if len(seen) > 8 {
				seen = seen[len(seen)-8:]
			}
			tail = append(tail[:0], seen...)
		}
		if err != nil {
			return
		}
	}
}
