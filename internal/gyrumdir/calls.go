package gyrumdir

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// The calls file (issue 44): one fixed-size record per completed tool
// call, appended by the hook with O_APPEND, so the loop and the hook read
// the latest calls with one pread of the file's tail. A record holds the
// call's fingerprints and a short label, nothing else of its input or
// output:
//
//	{"at":1765100000000000000,"c":"8f3e…","r":"01ab…","f":true,"l":"Bash: npm test","sum":"1c291ca3"}
//
// padded with spaces to CallRecordSize bytes, newline last; "sum" is the
// CRC-32C of the record without it, as in last-activity, so a torn record
// is skipped rather than misread. The loop rotates the file to calls.1
// past CallsRotate bytes.
const (
	// CallsFile gets one CallRecord appended per completed tool call.
	CallsFile = "calls"
	// CallsOld is where the loop rotates CallsFile.
	CallsOld = CallsFile + ".1"
	// CallRecordSize is the size of one record, newline included.
	CallRecordSize = 320
	// CallsRotate is the size past which the loop rotates CallsFile.
	CallsRotate = 256 << 10
)

// CallRecord is one completed tool call as the hook fingerprinted it.
type CallRecord struct {
	At time.Time
	// Call fingerprints the tool and its canonical input, Result the
	// outcome (exit status or error and a hash of the output).
	Call, Result [8]byte
	// Failed: the call ended in an error or a non-zero exit.
	Failed bool
	// Label is the tool and the first characters of a shell command; ""
	// when labels are off. Error is how a failed call failed, in a few
	// words ("" when labels are off).
	Label, Error string
}

// wireCall is a CallRecord as JSON.
type wireCall struct {
	At     int64  `json:"at"`
	Call   string `json:"c"`
	Result string `json:"r"`
	Failed bool   `json:"f,omitempty"`
	Label  string `json:"l,omitempty"`
	Error  string `json:"e,omitempty"`
}

// encodeCall returns r as a CallRecordSize line with its sum; the label is
// and the error are cut until the line fits.
func encodeCall(r CallRecord) []byte {
	label, errText := []rune(r.Label), []rune(r.Error)
	var buf []byte
	for {
		buf = append(buf[:0], `{"at":`...)
		buf = strconv.AppendInt(buf, r.At.UnixNano(), 10)
		buf = append(buf, `,"c":"`...)
		buf = hex.AppendEncode(buf, r.Call[:])
		buf = append(buf, `","r":"`...)
		buf = hex.AppendEncode(buf, r.Result[:])
		buf = append(buf, '"')
		if r.Failed {
			buf = append(buf, `,"f":true`...)
		}
		if len(label) > 0 {
			buf = append(buf, `,"l":`...)
			buf = appendJSONString(buf, string(label))
		}
		if len(errText) > 0 {
			buf = append(buf, `,"e":`...)
			buf = appendJSONString(buf, string(errText))
		}
		buf = append(buf, '}')
		if len(buf)+len(sumField) < CallRecordSize || len(label)+len(errText) == 0 {
			break
		}
		label, errText = label[:len(label)*3/4], errText[:len(errText)*3/4]
	}
	buf = appendSum(buf)
	for len(buf) < CallRecordSize-1 {
		buf = append(buf, ' ')
	}
	return append(buf, '\n')
}

// decodeCall reads one record; ok is false for a torn or foreign one.
func decodeCall(line []byte) (CallRecord, bool) {
	rec, ok := checkSum(line)
	if !ok {
		return CallRecord{}, false
	}
	var w wireCall
	if json.Unmarshal(rec, &w) != nil {
		return CallRecord{}, false
	}
	r := CallRecord{At: time.Unix(0, w.At).UTC(), Failed: w.Failed, Label: w.Label, Error: w.Error}
	if n, err := hex.Decode(r.Call[:], []byte(w.Call)); err != nil || n != 8 {
		return CallRecord{}, false
	}
	if n, err := hex.Decode(r.Result[:], []byte(w.Result)); err != nil || n != 8 {
		return CallRecord{}, false
	}
	return r, true
}

// AppendCall appends r to the calls file (created when missing): one
// write of one record, which O_APPEND keeps whole beside the records of
// parallel calls.
func (d Dir) AppendCall(r CallRecord) error {
	p := d.file(CallsFile)
	fd, err := openRaw(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, FilePerm)
	if err != nil {
		return fmt.Errorf("append call: %w", err)
	}
	werr := writeFull(fd, p, encodeCall(r), -1)
	cerr := unix.Close(fd)
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("append call: %w", err)
	}
	return nil
}

// LastCalls returns up to n of the latest records of the calls file,
// oldest first, skipping torn ones. A missing file is no calls.
func (d Dir) LastCalls(n int) ([]CallRecord, error) {
	if n <= 0 {
		return nil, nil
	}
	p := d.file(CallsFile)
	fd, st, err := openStat(p, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read calls: %w", err)
	}
	defer unix.Close(fd)
	size := st.Size - st.Size%CallRecordSize // a record being appended is not whole yet
	off := max(size-int64(n)*CallRecordSize, 0)
	buf := make([]byte, size-off)
	got, err := preadFull(fd, p, buf, off)
	if err != nil {
		return nil, fmt.Errorf("read calls: %w", err)
	}
	buf = buf[:got-got%CallRecordSize]
	out := make([]CallRecord, 0, len(buf)/CallRecordSize)
	for i := 0; i+CallRecordSize <= len(buf); i += CallRecordSize {
		if r, ok := decodeCall(buf[i : i+CallRecordSize-1]); ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// RotateCalls moves the calls file to calls.1 once it is past
// CallsRotate bytes; the hook's next call starts a new one.
func (d Dir) RotateCalls() error {
	p := d.file(CallsFile)
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("rotate calls: %w", err)
	}
	if fi.Size() < CallsRotate {
		return nil
	}
	if err := os.Rename(p, d.file(CallsOld)); err != nil {
		return fmt.Errorf("rotate calls: %w", err)
	}
	return nil
}

// Telling the agent about a loop or a lease without progress (issue 44).
const (
	// LoopToldFile holds the episode of the latest loop the hook told
	// the agent about, so it tells once per episode.
	LoopToldFile = "loop-told"
	// NudgeFile holds a message from the loop for the agent (a lease
	// without progress), which the hook shows on the next call and removes.
	NudgeFile = "nudge.json"
)

// Nudge is a message the loop leaves for the agent about its lease.
type Nudge struct {
	Ticket string `json:"ticket"`
	Epoch  int64  `json:"epoch"`
	// Episode names what the nudge is about (the verdict and when it
	// began); the loop writes one nudge per episode.
	Episode string    `json:"episode"`
	Text    string    `json:"text"`
	At      time.Time `json:"at"`
}

// MaxNudge bounds a nudge's text.
const MaxNudge = 2048

// WriteNudge writes n atomically.
func (d Dir) WriteNudge(n Nudge) error {
	if n.Text == "" || len(n.Text) > MaxNudge || n.Ticket == "" {
		return fmt.Errorf("write nudge: %q is not a nudge gyrum writes", n.Text)
	}
	b, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("write nudge: %w", err)
	}
	if err := WriteFileAtomic(d.file(NudgeFile), b); err != nil {
		return fmt.Errorf("write nudge: %w", err)
	}
	return nil
}

// TakeNudge returns the nudge and removes it, so it is shown once; ok is
// false when there is none, another hook took it, or it is not about the
// lease lease.json names.
func (d Dir) TakeNudge() (n Nudge, ok bool) {
	b, err := readSmall(d.file(NudgeFile), 4*MaxNudge)
	if err != nil {
		return Nudge{}, false
	}
	if json.Unmarshal(b, &n) != nil || n.Text == "" {
		_ = os.Remove(d.file(NudgeFile))
		return Nudge{}, false
	}
	if l, err := d.ReadLease(); err != nil || l.Ticket != n.Ticket || l.Epoch != n.Epoch {
		return Nudge{}, false
	}
	if err := os.Remove(d.file(NudgeFile)); err != nil {
		return Nudge{}, false
	}
	return n, true
}

// TellLoopOnce reports whether the loop episode named episode is one the
// agent was not told about yet (same reports whether two names are the
// same episode), and records that it now is. The hooks of calls that
// overlap (an agent's parallel calls, or one call's end beside the next
// one's) take turns, under a lock of the .gyrum/ directory; a hook that
// cannot have it within tellLockWait, or whose write is lost, may tell a
// second time.
func (d Dir) TellLoopOnce(episode string, same func(told, now string) bool) bool {
	defer d.lockDir(tellLockWait)()
	b, err := readSmall(d.file(LoopToldFile), 1024)
	if err == nil && same(string(b), episode) {
		return false
	}
	return WriteFileAtomic(d.file(LoopToldFile), []byte(episode)) == nil
}

// tellLockWait bounds how long a hook waits for another's TellLoopOnce:
// a hook must not hang its agent's tool call.
const tellLockWait = 250 * time.Millisecond

// lockDir takes an exclusive lock (flock) of the .gyrum/ directory,
// waiting at most wait, and returns its release. Without the lock in time
// (or on a file system without flock) it returns a release that does
// nothing: the caller goes on unlocked.
func (d Dir) lockDir(wait time.Duration) (unlock func()) {
	fd, err := unix.Open(d.Path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return func() {}
	}
	deadline := time.Now().Add(wait)
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { unix.Close(fd) }
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) || time.Now().After(deadline) {
			unix.Close(fd)
			return func() {}
		}
		time.Sleep(2 * time.Millisecond)
	}
}
