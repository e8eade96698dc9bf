// Package hook is `gyrum touch-activity`, the agent's tool-call hook. It
// reads the hook's JSON from stdin (Claude Code's PreToolUse, PostToolUse,
// PostToolUseFailure, or any other event), finds the .gyrum/ directories it
// concerns (targets: --dir; else its agent's leases from the agent index;
// else the cwd walk — only worktrees a start-work prepared) and updates the
// activity signals:
//
//   - PreToolUse: create the in-flight marker in-flight/<tool_use_id>, and
//     record the session's transcript_path once (gyrumdir.TranscriptFile);
//     an agent that sends no id (Gemini CLI) gets one marker per call,
//     named by the call's input (CallKey: tool_name and tool_input);
//   - PostToolUse, PostToolUseFailure: remove that marker (a call with an
//     id leaves a tombstone, so a second run of the hook for the same call —
//     Cursor also running Claude Code's hooks — credits nothing more) and
//     touch last-activity;
//   - any other event, no payload, or a payload that is not a JSON object:
//     touch last-activity (the hook ran, so the agent did something).
//
// "Touch" writes the activity record (source hook, event, tool, time) into
// last-activity in place and sets its mtime, and every run appends one byte
// to hook-events, so the loop can report that the hook fires and how often
// (gyrumdir.ActivityRecord, gyrumdir.HookCounter).
//
// It never fails its caller: the command exits 0 on every path and prints
// nothing but, once, a lease-ended notice in Claude Code's hook output
// format (Output); Run's error exists for tests. The payload is scanned, not
// decoded: only five top-level string fields are kept, and tool_input is
// hashed as it streams by, so a large tool_response costs a read, not an
// allocation.
package hook

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gyrum-labs/warp/internal/agent"
	"github.com/gyrum-labs/warp/internal/agentproc"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/proc"
	"github.com/gyrum-labs/warp/internal/progress"
)

// Claude Code hook event names that change the in-flight markers.
const (
	EventPreToolUse         = "PreToolUse"
	EventPostToolUse        = "PostToolUse"
	EventPostToolUseFailure = "PostToolUseFailure"
)

// canonical returns Claude Code's name of event (package agent maps each
// agent's own names). The record and the output keep the agent's name.
func canonical(event string) string { return agent.Canonical(event) }

// MaxInput is how much of stdin the hook reads at most. Fields after it are
// not seen; the ones Claude Code sends first (cwd, hook_event_name,
// tool_name) always are.
const MaxInput = 16 << 20

// maxField bounds a kept string value (raw, before unescaping).
const maxField = 4096

// Payload holds the fields of the hook input the hook uses.
type Payload struct {
	Event     string // hook_event_name
	CWD       string // cwd
	ToolName  string // tool_name
	ToolUseID string // tool_use_id
	// Transcript is transcript_path: the session's transcript, where the
	// loop reads whether a call the agent started has ended.
	Transcript string
	// CallKey names a call by its input where the agent gives it no id:
	// "input-" and a hash of tool_name and the raw bytes of tool_input,
	// which the agent sends alike before and after the call (Gemini CLI
	// 0.61 does). "" when there is no tool_input or it was cut off.
	CallKey string
	// Object reports that the input started as a JSON object; false for
	// empty input and garbage.
	Object bool
}

// maxCapture bounds what the hook keeps of tool_input, tool_response and
// error to fingerprint them; a larger value is fingerprinted by the hash
// of its raw bytes, computed as it streams by.
const maxCapture = 64 << 10

// Parse scans at most limit bytes of r for the top-level string fields
// hook_event_name, cwd, tool_name, tool_use_id and transcript_path,
// skipping every other value without keeping it (tool_input is hashed on
// the way: CallKey). A syntax error or a cut-off input ends the scan: the
// fields seen before it are returned.
func Parse(r io.Reader, limit int64) Payload {
	p, _ := ParseCall(r, limit)
	return p
}

// ParseCall is Parse, also returning what a completed call's fingerprint
// is made of (issue 44): the raw tool_input, tool_response (or
// tool_result) and error, each kept up to maxCapture bytes, else stood
// for by a hash of its bytes.
func ParseCall(r io.Reader, limit int64) (Payload, progress.Completed) {
	s := &scanner{r: bufio.NewReaderSize(io.LimitReader(r, limit), 32<<10)}
	p := s.payload()
	if s.inputDone {
		p.CallKey = callKey(p.ToolName, s.input)
	}
	s.done.Tool = p.ToolName
	return p, s.done
}

// payload scans the top-level object; the hash of a complete tool_input is
// left in s.input.
func (s *scanner) payload() Payload {
	var p Payload
	s.ws()
	if c, ok := s.next(); !ok || c != '{' {
		return p
	}
	p.Object = true
	for {
		s.ws()
		c, ok := s.next()
		if !ok || c == '}' {
			return p
		}
		if c == ',' {
			continue
		}
		if c != '"' {
			return p
		}
		key, ok := s.str(64)
		if !ok {
			return p
		}
		s.ws()
		if c, ok := s.next(); !ok || c != ':' {
			return p
		}
		s.ws()
		if !s.field(key, &p) {
			return p
		}
	}
}

// field reads the value of key into p (the fields the hook uses) or into
// the scanner's record of the call (input, response, error), or skips it;
// false when the document ends or breaks.
func (s *scanner) field(key string, p *Payload) bool {
	var dst *string
	switch key {
	case "hook_event_name":
		dst = &p.Event
	case "cwd":
		dst = &p.CWD
	case "tool_name":
		dst = &p.ToolName
	case "tool_use_id":
		dst = &p.ToolUseID
	case "transcript_path":
		dst = &p.Transcript
	}
	c, ok := s.peek()
	if !ok {
		return false
	}
	if dst != nil && c == '"' {
		s.next()
		v, ok := s.str(maxField)
		if !ok {
			return false
		}
		*dst = v
		return true
	}
	switch key {
	case "tool_input", "tool_response", "tool_result", "error":
		raw, h, ok := s.capture()
		if !ok {
			return false
		}
		switch key {
		case "tool_input":
			s.input, s.inputDone = h, true
			s.done.Input, s.done.InputHash = raw, h
		case "error":
			s.done.Error = raw
			if raw == nil {
				s.done.Error = []byte(`"error"`) // too large to keep: an error all the same
			}
		default:
			s.done.Response, s.done.ResponseHash, s.done.HasResponse = raw, h, true
		}
		return true
	}
	return s.skip()
}

// The scanner hashes tool_input as it reads it: the bytes it reads one at
// a time (the JSON between strings) with FNV-1a inline, the strings' runs
// with CRC-32C, which the CPU computes at memory speed — a large Write's
// content costs little more than skipping it. Both are independent of how
// the reads split the input, so the two payloads of a call agree.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const (
	fnvOffset uint64 = 14695981039346656037
	fnvPrime  uint64 = 1099511628211
)

// callKey is the marker name of a call without an id: its tool and the
// hash of its raw input. The "-" and 16 hex digits make gyrumdir read it as
// no tool_use_id (Marker.ToolUseID), so the loop looks it up in no
// transcript.
func callKey(tool string, input uint64) string {
	h := fnvOffset
	for i := 0; i < len(tool); i++ {
		h = (h ^ uint64(tool[i])) * fnvPrime
	}
	h *= fnvPrime // a zero byte between the two
	for i := 0; i < 8; i++ {
		h = (h ^ (input >> (8 * i) & 0xff)) * fnvPrime
	}
	return fmt.Sprintf("input-%016x", h)
}

// capture skips one value, hashing its raw bytes and keeping them up to
// maxCapture (raw nil past that).
func (s *scanner) capture() (raw []byte, hash uint64, ok bool) {
	s.hashing, s.h, s.crc = true, fnvOffset, 0
	s.keep, s.kept, s.over = true, s.kept[:0], false
	ok = s.skip()
	s.hashing, s.keep = false, false
	if !s.over {
		raw = bytes.Clone(s.kept)
	}
	return raw, s.h ^ uint64(s.crc)<<32, ok
}

type scanner struct {
	r *bufio.Reader
	// keep collects what hashing reads into kept, up to maxCapture bytes
	// (over when the value is larger).
	keep bool
	kept []byte
	over bool
	// done collects the fingerprint's material (ParseCall).
	done progress.Completed
	// hashing folds every byte read into h and crc (tool_input's raw
	// value); input is the hash of a tool_input read to its end
	// (inputDone).
	hashing   bool
	h         uint64
	crc       uint32
	input     uint64
	inputDone bool
}

func (s *scanner) next() (byte, bool) {
	c, err := s.r.ReadByte()
	if err == nil && s.hashing {
		s.h = (s.h ^ uint64(c)) * fnvPrime
		if s.keep {
			s.keepBytes([]byte{c})
		}
	}
	return c, err == nil
}

func (s *scanner) fold(b []byte) {
	s.crc = crc32.Update(s.crc, castagnoli, b)
	if s.keep {
		s.keepBytes(b)
	}
}

func (s *scanner) keepBytes(b []byte) {
	if s.over {
		return
	}
	if len(s.kept)+len(b) > maxCapture {
		s.over, s.kept = true, s.kept[:0]
		return
	}
	s.kept = append(s.kept, b...)
}

func (s *scanner) peek() (byte, bool) {
	b, err := s.r.Peek(1)
	if err != nil {
		return 0, false
	}
	return b[0], true
}

func (s *scanner) ws() {
	for {
		c, ok := s.peek()
		if !ok || (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
			return
		}
		s.next()
	}
}

// str reads the rest of a string whose opening quote was consumed, keeping
// at most keep raw bytes, and returns it unescaped. ok is false when the
// input ends first. It moves a buffer at a time (ReadSlice up to the next
// quote), so skipping a megabyte of tool output is a few memchr calls.
func (s *scanner) str(keep int) (string, bool) {
	var raw []byte
	escaped := false
	run := 0 // backslashes right before the current position
	for {
		chunk, err := s.r.ReadSlice('"')
		if err != nil && err != bufio.ErrBufferFull {
			return "", false
		}
		if s.hashing {
			s.fold(chunk)
		}
		body := chunk
		if err == nil {
			body = chunk[:len(chunk)-1] // without the quote
		}
		if bytes.IndexByte(body, '\\') >= 0 {
			escaped = true
		}
		n := 0
		for n < len(body) && body[len(body)-1-n] == '\\' {
			n++
		}
		if n == len(body) {
			run += n
		} else {
			run = n
		}
		closed := err == nil && run%2 == 0
		if err == nil && !closed {
			body, run = chunk, 0 // an escaped quote belongs to the string
		}
		if room := keep - len(raw); room > 0 {
			raw = append(raw, body[:min(len(body), room)]...)
		}
		if closed {
			break
		}
	}
	if !escaped {
		return string(raw), true
	}
	var out string
	quoted := append(append([]byte{'"'}, raw...), '"')
	if json.Unmarshal(quoted, &out) != nil {
		return string(raw), true // cut in the middle of an escape: keep it raw
	}
	return out, true
}

// skip consumes one JSON value of any kind without keeping it.
func (s *scanner) skip() bool {
	c, ok := s.next()
	if !ok {
		return false
	}
	switch c {
	case '"':
		_, ok := s.str(0)
		return ok
	case '{', '[':
		depth := 1
		for depth > 0 {
			c, ok := s.next()
			if !ok {
				return false
			}
			switch c {
			case '"':
				if _, ok := s.str(0); !ok {
					return false
				}
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
		}
		return true
	default: // number, true, false, null
		for {
			c, ok := s.peek()
			if !ok {
				return true
			}
			if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				return true
			}
			s.next()
		}
	}
}

// Options says where the hook looks for .gyrum/ and what time it is.
type Options struct {
	// Dir, when set (--dir), is where the walk up starts; it wins over
	// everything else.
	Dir string
	// AgentPID is the agent the hook runs for (Claude Code's CLAUDE_PID;
	// for other agents the nearest agent above the hook, see
	// agentproc.Nearest), 0 when unknown; Agents is the index of the
	// worktrees whose leases agents hold. The hook credits the leases of
	// its agent wherever the payload's cwd is.
	AgentPID int
	Agents   gyrumdir.AgentIndex
	// Parent, when set, is the hook's parent process: AgentPID counts
	// only when no other agent comes between the two (CLAUDE_PID handed
	// down to an agent a Claude Code session started names the wrong
	// agent; see agentproc.Inherited).
	Parent int
	// Prepared, when set, limits the hook to worktrees a start-work on this
	// host prepared: a .gyrum/ found through --dir or a cwd that is not one
	// (a repository can commit one) is left alone. Zero: no limit.
	Prepared gyrumdir.Prepared
	// Cwd is the process's working directory, the last place tried.
	Cwd string
	// Now is the time written to the signals.
	Now time.Time
	// Ask, when set, asks warp whether the lease of worktree d has ended,
	// and if so returns the notice for the agent. A Post event calls it
	// when no notice waits, the worktree's loop is silent (gone, or its
	// state stopped moving: a full disk) and the agent was not told yet,
	// at most once a minute per worktree (gyrumdir.Dir.ShouldAsk).
	Ask func(d gyrumdir.Dir) (gyrumdir.LeaseEnded, bool)
	// NoLabels keeps the fingerprints of calls without their labels (the
	// tool and a shell command's first characters): GYRUM_LOOP_LABELS=off.
	NoLabels bool
	// NoTell keeps the hook from telling the agent that it loops or makes
	// no progress: GYRUM_LOOP_TELL=off.
	NoTell bool
}

// Result is what the hook has to tell the agent: the messages of leases
// that ended without the agent asking (see gyrumdir.LeaseEnded), shown
// once, on a Post event.
type Result struct {
	// Event is the payload's hook_event_name.
	Event   string
	Notices []string
}

// ErrNoWorktree reports that no .gyrum/ was found from any start point.
var ErrNoWorktree = errors.New("no .gyrum directory found")

// Apply applies payload p to the .gyrum/ directories it concerns: the one
// found walking up from o.Dir when set; else the worktrees whose leases
// the agent o.AgentPID holds (the agent index); else the one found walking
// up from p.CWD, then o.Cwd. It updates the markers and last-activity, and
// on a Post event collects the lease-ended notices waiting there.
func Apply(p Payload, o Options) (Result, error) { return ApplyCall(p, nil, o) }

// ApplyCall is Apply for a payload whose call material ParseCall read:
// on a Post event it also appends the call's fingerprints to the calls
// file, and tells the agent, once per episode, that it loops (the latest
// calls repeat: progress.Detect) or that its lease makes no progress (the
// loop's nudge).
func ApplyCall(p Payload, done *progress.Completed, o Options) (Result, error) {
	dirs, links := targets(p, o)
	if len(dirs) == 0 {
		return Result{}, ErrNoWorktree
	}
	res := Result{Event: p.Event}
	var errs []error
	for i, d := range dirs {
		recorded, err := applyTo(d, p, o)
		errs = append(errs, err)
		if ev := canonical(p.Event); ev != EventPostToolUse && ev != EventPostToolUseFailure {
			continue
		}
		if recorded && done != nil && !d.LeaseEndTold() {
			tell, err := recordCall(d, *done, o)
			errs = append(errs, err)
			if tell != "" {
				res.Notices = append(res.Notices, tell)
			}
		}
		if n, ok := d.TakeNudge(); ok && !o.NoTell {
			res.Notices = append(res.Notices, n.Text)
		}
		n, ok := d.TakeNotice()
		if !ok && o.Ask != nil && d.LoopSilent(o.Now) && d.ShouldAsk(o.Now) {
			if n, ok = o.Ask(d); ok {
				_ = d.MarkTold(o.Now)
			}
		}
		if ok {
			res.Notices = append(res.Notices, n.Message(d.Worktree))
			if links != nil {
				// Told: the agent's tool calls no longer concern that lease.
				_ = o.Agents.Remove(links[i].Agent, links[i].Worktree)
			}
		}
	}
	return res, errors.Join(errs...)
}

// targets returns the .gyrum/ directories the payload concerns and, when
// they come from the agent index, the index entries (same order).
func targets(p Payload, o Options) ([]gyrumdir.Dir, []gyrumdir.AgentLink) {
	if o.Dir != "" {
		if d, err := find(o.Dir); err == nil && o.ours(d) {
			return []gyrumdir.Dir{d}, nil
		}
		return nil, nil
	}
	if o.AgentPID > 0 && o.Agents != (gyrumdir.AgentIndex{}) {
		if links, _ := o.Agents.Lookup(o.AgentPID); len(links) > 0 && !o.inherited() {
			// Only now is the agent's identity worth a read: an entry left by
			// a dead process whose pid was recycled must not be credited.
			if id, err := proc.Lookup(o.AgentPID); err == nil {
				var dirs []gyrumdir.Dir
				var mine []gyrumdir.AgentLink
				for _, l := range links {
					if l.Agent.StartTime != id.StartTime {
						continue
					}
					if d, err := gyrumdir.Open(l.Worktree); err == nil {
						dirs, mine = append(dirs, d), append(mine, l)
					}
				}
				if len(dirs) > 0 {
					return dirs, mine
				}
			}
		}
	}
	if d, err := find(p.CWD, o.Cwd); err == nil && o.ours(d) {
		return []gyrumdir.Dir{d}, nil
	}
	return nil, nil
}

// inherited reports whether o.AgentPID reached the hook through another
// agent, which is then the one whose tool call this is.
func (o Options) inherited() bool {
	if o.Parent <= 0 {
		return false
	}
	_, _, ok := agentproc.Inherited(o.AgentPID, o.Parent)
	return ok
}

// ours reports whether the hook may write into d.
func (o Options) ours(d gyrumdir.Dir) bool {
	return o.Prepared == (gyrumdir.Prepared{}) || o.Prepared.Has(d.Worktree)
}

// recordCall appends the completed call's fingerprints to d's calls file
// and returns what to tell the agent when the latest calls now make a loop
// it was not told about ("" when none, or when o.NoTell).
func recordCall(d gyrumdir.Dir, c progress.Completed, o Options) (string, error) {
	fp := progress.Fingerprint(c, !o.NoLabels)
	if err := d.AppendCall(gyrumdir.CallRecord{At: o.Now, Call: fp.Call, Result: fp.Result, Failed: fp.Failed, Label: fp.Label, Error: fp.Error}); err != nil {
		return "", err
	}
	if o.NoTell {
		return "", nil
	}
	recs, err := d.LastCalls(progress.Window)
	if err != nil {
		return "", err
	}
	loop, ok := progress.Detect(calls(recs), progress.DefaultLimits)
	if !ok {
		return "", nil
	}
	if !d.TellLoopOnce(loopEpisode(recs, loop), sameEpisode) {
		return "", nil
	}
	return LoopMessage(loop), nil
}

// loopEpisode names the repetition the latest calls recs end in: what
// repeats (the last call and its result; for an alternation, both calls)
// and when it began ("*" for a repetition longer than the calls read: it
// fills them all, and its start is out of sight).
func loopEpisode(recs []gyrumdir.CallRecord, loop progress.Loop) string {
	n := len(recs)
	what := []string{hex.EncodeToString(recs[n-1].Call[:]) + hex.EncodeToString(recs[n-1].Result[:])}
	if loop.Alternating {
		what = append(what, hex.EncodeToString(recs[n-2].Call[:])+hex.EncodeToString(recs[n-2].Result[:]))
		slices.Sort(what)
	}
	key := strings.Join(what, "+")
	if loop.Count >= n {
		return key + " *"
	}
	return key + " " + recs[n-loop.Count].At.UTC().Format(time.RFC3339Nano)
}

// sameEpisode reports whether the episodes told and now (loopEpisode) are
// one: the same repetition with the same start, or one whose start is now
// out of sight and that repeats what told did.
func sameEpisode(told, now string) bool {
	tk, tStart, _ := strings.Cut(told, " ")
	nk, nStart, _ := strings.Cut(now, " ")
	return tk == nk && (tStart == nStart || nStart == "*")
}

// LoopMessage is what the agent is told when its latest calls repeat.
func LoopMessage(l progress.Loop) string {
	return "gyrum: you are " + progress.Words(l.Label, l.Count, l.Error) +
		" — the same call with the same result; repeating it will not change that. " +
		"Change approach; if stuck, `gyrum note` what you tried and `gyrum release`."
}

// applyTo updates d's markers and activity for p; recorded is false for
// a second run of the hook for the same call (nothing more is credited).
func applyTo(d gyrumdir.Dir, p Payload, o Options) (recorded bool, _ error) {
	var err error
	rec := gyrumdir.ActivityRecord{Source: gyrumdir.SourceHook, Event: p.Event, Tool: p.ToolName, At: o.Now}
	switch canonical(p.Event) {
	case EventPreToolUse:
		id := p.ToolUseID
		if id == "" {
			id = p.CallKey
		} else if started, ended := d.CallSeen(id); started || ended {
			return false, nil // the same call through a second hook configuration
		}
		err = errors.Join(d.StartInFlight(id, p.ToolName, o.Now), d.RecordTranscript(p.Transcript))
	case EventPostToolUse, EventPostToolUseFailure:
		if p.ToolUseID != "" {
			dup, eerr := d.EndCall(p.ToolUseID)
			if dup {
				return false, nil // ended already, by the same call's other hook run
			}
			err = errors.Join(eerr, d.WriteActivity(rec))
			break
		}
		err = errors.Join(endMarker(d, p), d.WriteActivity(rec))
	default:
		err = d.WriteActivity(rec)
	}
	// Every run counts, PreToolUse too: the loop's hook_seen and
	// hook_events report that the hook is wired, whatever the event.
	return true, errors.Join(err, d.CountHookEvent())
}

// endMarker removes the marker of a tool call without a tool_use_id (Gemini
// CLI sends none; a call with one ends by gyrumdir's EndCall): by its input (CallKey), so each AfterTool ends
// its own BeforeTool's call and a short call running beside a long one
// never ends the long one's marker. When neither names a marker (an input
// cut off by MaxInput, before or after) it removes the oldest marker of
// the same tool that has no input key, so a marker never outlives its
// call by much.
func endMarker(d gyrumdir.Dir, p Payload) error {
	if p.CallKey != "" {
		err := os.Remove(filepath.Join(d.File(gyrumdir.InFlightDir), p.CallKey))
		if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	ms, err := d.InFlight()
	if err != nil {
		return err
	}
	var oldest *gyrumdir.Marker
	for i := range ms {
		if strings.HasPrefix(ms[i].Name, "input-") {
			continue // another call's, named by its input
		}
		if ms[i].Tool == p.ToolName && (oldest == nil || ms[i].Since.Before(oldest.Since)) {
			oldest = &ms[i]
		}
	}
	if oldest == nil {
		return nil
	}
	if err := os.Remove(filepath.Join(d.File(gyrumdir.InFlightDir), oldest.Name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func find(starts ...string) (gyrumdir.Dir, error) {
	for _, s := range starts {
		if s == "" {
			continue
		}
		if d, err := gyrumdir.Find(s); err == nil {
			return d, nil
		}
	}
	return gyrumdir.Dir{}, ErrNoWorktree
}

// Run is the whole hook: read the payload from stdin (not at all when stdin
// is a terminal; at most 2 s and MaxInput bytes otherwise) and apply it.
// Callers ignore the error; tests read it.
func Run(stdin io.Reader, o Options) (Result, error) {
	p := Payload{}
	var done *progress.Completed
	if stdin != nil && readable(stdin) {
		if f, ok := stdin.(*os.File); ok {
			// A writer that never closes the pipe must not hang the agent.
			stdin = withDeadline(f, time.Now().Add(StdinWait))
		}
		var c progress.Completed
		p, c = ParseCall(stdin, MaxInput)
		done = &c
	}
	if !p.Object {
		p, done = Payload{}, nil // garbage or nothing: a plain touch
	}
	return ApplyCall(p, done, o)
}

// StdinWait bounds the hook's read of its payload, the whole of it: a
// writer that never closes the pipe costs the agent this long, once.
const StdinWait = 2 * time.Second

// withDeadline returns f, reads of which end with os.ErrDeadlineExceeded
// at deadline. A descriptor Go's poller holds takes the deadline itself;
// one it does not — a blocking pipe, which is what agents hand their hooks
// (Node clears O_NONBLOCK on a child's standard streams), where
// SetReadDeadline fails with os.ErrNoDeadline — is polled before each read.
func withDeadline(f *os.File, deadline time.Time) io.Reader {
	if f.SetReadDeadline(deadline) == nil {
		return f
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return f
	}
	return &pollReader{f: f, rc: rc, deadline: deadline}
}

// pollReader reads a blocking descriptor, waiting for data with poll(2)
// until its deadline instead of blocking in read(2).
type pollReader struct {
	f        *os.File
	rc       syscall.RawConn
	deadline time.Time
}

func (r *pollReader) Read(b []byte) (int, error) {
	for {
		wait := time.Until(r.deadline)
		if wait <= 0 {
			return 0, os.ErrDeadlineExceeded
		}
		var n int
		var perr error
		err := r.rc.Control(func(fd uintptr) {
			n, perr = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(wait/time.Millisecond)+1)
		})
		if err == nil {
			err = perr
		}
		switch {
		case errors.Is(err, unix.EINTR):
		case err != nil:
			return 0, err
		case n > 0: // data, or the writer's end closed (a read then sees EOF)
			return r.f.Read(b)
		}
	}
}

// readable reports whether r is worth reading: not a terminal (a person
// typing; /dev/null too), not a closed descriptor.
func readable(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return true
	}
	st, err := f.Stat()
	if err != nil {
		return false
	}
	return st.Mode()&os.ModeCharDevice == 0
}

// Output is what the hook prints on stdout for event and res: nothing when
// there is nothing to tell; else Claude Code's hook output object, whose
// hookSpecificOutput.additionalContext the client adds to what the model
// sees next (Post events); for an agent that reads another shape
// (agent.NoticeTopLevel: Cursor), that one. The hook's --agent picks the
// shape instead (OutputAs) where the event name does not tell.
func Output(event string, res Result) []byte { return OutputAs(agent.NoticeFor(event), event, res) }

// OutputAs is Output in the notice shape n, for a hook told its agent
// (`--agent`: an agent whose event names do not say which it is).
func OutputAs(n agent.Notice, event string, res Result) []byte {
	if len(res.Notices) == 0 {
		return nil
	}
	switch n {
	case agent.NoticeTopLevel, agent.NoticeAdditionalContext:
		// Cursor documents a top-level additional_context, GitHub Copilot
		// CLI a top-level additionalContext.
		var v any = struct {
			AdditionalContext string `json:"additional_context"`
		}{strings.Join(res.Notices, "\n\n")}
		if n == agent.NoticeAdditionalContext {
			v = struct {
				AdditionalContext string `json:"additionalContext"`
			}{strings.Join(res.Notices, "\n\n")}
		}
		data, err := json.Marshal(v)
		if err != nil {
			return nil
		}
		return append(data, '\n')
	}
	type specific struct {
		HookEventName     string `json:"hookEventName"`
		AdditionalContext string `json:"additionalContext"`
	}
	out := struct {
		HookSpecificOutput specific `json:"hookSpecificOutput"`
	}{specific{HookEventName: event, AdditionalContext: strings.Join(res.Notices, "\n\n")}}
	data, err := json.Marshal(out)
	if err != nil {
		return nil
	}
	return append(data, '\n')
}

// calls turns the records of the calls file into progress.Calls.
func calls(recs []gyrumdir.CallRecord) []progress.Call {
	out := make([]progress.Call, len(recs))
	for i, r := range recs {
		out[i] = progress.Call{Call: r.Call, Result: r.Result, Failed: r.Failed, Label: r.Label, Error: r.Error}
	}
	return out
}
