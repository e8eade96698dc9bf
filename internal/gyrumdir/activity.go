package gyrumdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// TouchActivity sets the mtime of last-activity to now, creating the file
// when it is missing. That mtime is the activity signal.
func (d Dir) TouchActivity(now time.Time) error {
	p := d.file(ActivityFile)
	f, err := openFile(p, os.O_WRONLY|os.O_CREATE, FilePerm)
	if err == nil {
		_ = f.Close()
		err = setTimes(p, now)
	}
	if err != nil {
		return fmt.Errorf("touch activity: %w", err)
	}
	return nil
}

// LastActivity returns the mtime of last-activity. Missing wraps fs.ErrNotExist.
func (d Dir) LastActivity() (time.Time, error) {
	t, err := lstatTime(d.file(ActivityFile))
	if err != nil {
		return time.Time{}, fmt.Errorf("last activity: %w", err)
	}
	return t, nil
}

// maxMarkerName bounds marker file names well below NAME_MAX.
const maxMarkerName = 100

// MarkerName turns a tool_use_id into a safe file name: characters outside
// [A-Za-z0-9._-] become '_', a leading '.' becomes '_', and a name that had
// to change or is too long gets a hash suffix so that distinct ids stay
// distinct. An empty id gives "unknown".
func MarkerName(toolUseID string) string {
	if toolUseID == "" {
		return "unknown"
	}
	var b strings.Builder
	changed := false
	for i := 0; i < len(toolUseID); i++ {
		c := toolUseID[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok || (i == 0 && c == '.') {
			c, changed = '_', true
		}
		b.WriteByte(c)
	}
	name := b.String()
	if changed || len(name) > maxMarkerName {
		if len(name) > maxMarkerName-17 {
			name = name[:maxMarkerName-17]
		}
		h := fnv.New64a()
		h.Write([]byte(toolUseID))
		name += "-" + strconv.FormatUint(h.Sum64(), 16)
	}
	return name
}

// maxToolName bounds what a marker records of the tool name (the server
// accepts in_flight up to 256 bytes).
const maxToolName = 200

// StartInFlight creates the marker of tool call toolUseID running tool.
// Its mtime is when the call started; its content is the tool name.
func (d Dir) StartInFlight(toolUseID, tool string, now time.Time) error {
	tool = truncate(tool, maxToolName)
	dir := d.file(InFlightDir)
	if err := checkDir(dir); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("start in-flight: %w", err)
		}
		// in-flight/ was removed: recreate it once.
		if err := os.Mkdir(dir, DirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("start in-flight: %w", err)
		}
		if err := checkDir(dir); err != nil {
			return fmt.Errorf("start in-flight: %w", err)
		}
	}
	p := filepath.Join(dir, MarkerName(toolUseID))
	f, err := openFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, FilePerm)
	if err != nil {
		return fmt.Errorf("start in-flight: %w", err)
	}
	_, werr := f.WriteString(tool)
	if err := errors.Join(werr, f.Close()); err != nil {
		return fmt.Errorf("start in-flight: %w", err)
	}
	if err := setTimes(p, now); err != nil {
		return fmt.Errorf("start in-flight: %w", err)
	}
	return nil
}

// EndInFlight removes the marker of tool call toolUseID; a missing marker
// is not an error (PostToolUse without PreToolUse, or cleared meanwhile).
func (d Dir) EndInFlight(toolUseID string) error {
	p := filepath.Join(d.file(InFlightDir), MarkerName(toolUseID))
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("end in-flight: %w", err)
	}
	return nil
}

// donePrefix names the tombstone of a call the hook saw end:
// in-flight/.done-NAME, NAME its marker's name (MarkerName never starts a
// name with '.', and InFlight skips these). A second run of the hook for
// the same call — an agent that runs two hook configurations, such as
// Cursor with Claude Code's hooks loaded too — finds the call already
// started or ended and credits nothing more.
const donePrefix = ".done-"

// CallSeen reports whether the hook already saw tool call toolUseID start
// (its marker exists) or end (its tombstone exists).
func (d Dir) CallSeen(toolUseID string) (started, ended bool) {
	name := MarkerName(toolUseID)
	dir := d.file(InFlightDir)
	if _, err := lstat(filepath.Join(dir, name)); err == nil {
		return true, false
	}
	_, err := lstat(filepath.Join(dir, donePrefix+name))
	return false, err == nil
}

// EndCall ends tool call toolUseID: its marker becomes its tombstone (one
// rename), or a tombstone is created when it had no marker. dup reports
// that the call had already ended: no marker, a tombstone.
func (d Dir) EndCall(toolUseID string) (dup bool, err error) {
	name := MarkerName(toolUseID)
	dir := d.file(InFlightDir)
	done := filepath.Join(dir, donePrefix+name)
	err = os.Rename(filepath.Join(dir, name), done)
	if err == nil {
		return false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("end in-flight: %w", err)
	}
	if _, err := lstat(done); err == nil {
		return true, nil
	}
	if checkDir(dir) != nil {
		return false, nil // no in-flight/ at all: nothing to record
	}
	f, err := openFile(done, os.O_WRONLY|os.O_CREATE|os.O_EXCL, FilePerm)
	if errors.Is(err, fs.ErrExist) {
		return true, nil // the other run got here first
	}
	if err != nil {
		return false, fmt.Errorf("end in-flight: %w", err)
	}
	return false, f.Close()
}

// PruneEnded removes the tombstones (EndCall) of calls that ended before
// before; the loop runs it now and then.
func (d Dir) PruneEnded(before time.Time) error {
	dir := d.file(InFlightDir)
	if err := checkDir(dir); err != nil {
		return nil
	}
	ents, err := readDirNoFollow(dir)
	if err != nil {
		return nil
	}
	var errs []error
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), donePrefix) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		st, err := lstat(p)
		if err != nil || !modTime(&st).Before(before) {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Marker is one in-flight tool call.
type Marker struct {
	Name  string    // file name (MarkerName of the tool_use_id)
	Tool  string    // tool name, "" when unreadable
	Since time.Time // mtime: when the call started
}

// ToolUseID returns the tool_use_id the marker was made for, or "" when
// its name does not give it back (an id MarkerName had to change, or
// none).
func (m Marker) ToolUseID() string {
	if m.Name == "unknown" || MarkerName(m.Name) != m.Name || hashed(m.Name) {
		return ""
	}
	return m.Name
}

// hashed reports whether name may end with the hash suffix MarkerName
// adds to an id it changed (a '-' and 8 to 16 hex digits; shorter ones
// are rare enough to tell apart): the id is then not the name. An id
// that merely looks so is left unknown, which is safe.
func hashed(name string) bool {
	i := strings.LastIndexByte(name, '-')
	if n := len(name) - i - 1; i < 0 || n < 8 || n > 16 {
		return false
	}
	_, err := strconv.ParseUint(name[i+1:], 16, 64)
	return err == nil
}

// RecordTranscript records path as the agent's session transcript (see
// TranscriptFile), unless one is recorded already: the hook calls it on
// every PreToolUse, and after the first it costs one failed create.
func (d Dir) RecordTranscript(path string) error {
	if path == "" || len(path) > maxTranscriptPath {
		return nil
	}
	f, err := openFile(d.file(TranscriptFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, FilePerm)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("record transcript: %w", err)
	}
	_, werr := f.WriteString(path)
	if err := errors.Join(werr, f.Close()); err != nil {
		return fmt.Errorf("record transcript: %w", err)
	}
	return nil
}

// Transcript returns the recorded transcript path (RecordTranscript).
func (d Dir) Transcript() (string, error) {
	data, err := readSmall(d.file(TranscriptFile), maxTranscriptPath)
	if err != nil {
		return "", fmt.Errorf("transcript: %w", err)
	}
	return string(data), nil
}

// maxTranscriptPath bounds a recorded transcript path (PATH_MAX).
const maxTranscriptPath = 4096

// InFlight lists the in-flight markers. A missing in-flight/ is empty.
func (d Dir) InFlight() ([]Marker, error) {
	dir := d.file(InFlightDir)
	if err := checkDir(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("list in-flight: %w", err)
	}
	ents, err := readDirNoFollow(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("list in-flight: %w", err)
	}
	out := make([]Marker, 0, len(ents))
	for _, e := range ents {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue // not a file, or an ended call's tombstone
		}
		p := filepath.Join(dir, e.Name())
		st, err := lstat(p)
		if err != nil || uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG {
			continue // removed meanwhile, or not a file
		}
		m := Marker{Name: e.Name(), Since: modTime(&st)}
		if data, err := readSmall(p, maxToolName); err == nil {
			m.Tool = string(data)
		}
		out = append(out, m)
	}
	return out, nil
}

// Wait is the declaration of `gyrum wait`: a long step that counts as
// activity from DeclaredAt until Until, and never longer than the in-flight
// cap after DeclaredAt.
type Wait struct {
	Reason     string    `json:"reason"`
	DeclaredAt time.Time `json:"declared_at"`
	Until      time.Time `json:"until"`
}

// WaitClockSkew is how far in the future a wait's declared_at may lie and
// still count: gyrum wait writes the time it runs, so a later one is a
// clock stepped back, or a wait.json nobody on this host wrote (a
// repository can commit one dated 2099, which would hold a lease forever).
const WaitClockSkew = time.Minute

// Future reports whether w was declared after now (beyond WaitClockSkew):
// such a wait counts for nothing.
func (w Wait) Future(now time.Time) bool { return w.DeclaredAt.After(now.Add(WaitClockSkew)) }

// WriteWait writes the wait declaration atomically.
func (d Dir) WriteWait(w Wait) error {
	if !w.Until.After(w.DeclaredAt) {
		return fmt.Errorf("write wait: until %s is not after declared_at %s", w.Until, w.DeclaredAt)
	}
	data, err := json.Marshal(w)
	if err != nil {
		return fmt.Errorf("encode wait: %w", err)
	}
	return WriteFileAtomic(d.file(WaitFile), append(data, '\n'))
}

// ReadWait reads the wait declaration. Missing wraps fs.ErrNotExist,
// unusable content wraps ErrCorrupt.
func (d Dir) ReadWait() (Wait, error) {
	p := d.file(WaitFile)
	data, err := readSmall(p, maxSmallFile)
	if err != nil {
		return Wait{}, err
	}
	var w Wait
	if err := json.Unmarshal(data, &w); err != nil {
		return Wait{}, fmt.Errorf("%w: %s: %v", ErrCorrupt, p, err)
	}
	if w.DeclaredAt.IsZero() || !w.Until.After(w.DeclaredAt) {
		return Wait{}, fmt.Errorf("%w: %s: want declared_at before until", ErrCorrupt, p)
	}
	return w, nil
}

// RemoveWait ends the wait declaration; a missing one is not an error.
func (d Dir) RemoveWait() error {
	if err := os.Remove(d.file(WaitFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove wait: %w", err)
	}
	return nil
}

// Activity is the loop's view of the agent's progress at one instant.
type Activity struct {
	// Age is how long ago the agent last showed activity: now − mtime of
	// last-activity, or 0 while a tool call or a declared wait is running
	// and younger than the in-flight cap. Never negative.
	Age time.Duration
	// LastActivity is the mtime of last-activity; zero when missing.
	LastActivity time.Time
	// InFlight names what keeps Age at 0: the tool of the most recent
	// running tool call, or "wait: REASON"; empty when nothing does.
	InFlight string
	// InFlightSince is when that tool call or wait started.
	InFlightSince time.Time
	// Expired counts in-flight markers older than the cap: presumed hung,
	// they no longer count.
	Expired int
}

// WaitPrefix starts Activity.InFlight for a declared wait.
const WaitPrefix = "wait: "

// Activity computes the activity at now with in-flight cap inFlightMax.
// It fails (wrapping fs.ErrNotExist) only when there is no evidence at
// all: last-activity missing and nothing in flight.
func (d Dir) Activity(now time.Time, inFlightMax time.Duration) (Activity, error) {
	var a Activity
	last, lerr := d.LastActivity()
	if lerr == nil {
		a.LastActivity = last
		a.Age = max(now.Sub(last), 0)
	} else if !errors.Is(lerr, fs.ErrNotExist) {
		return Activity{}, lerr
	}
	markers, err := d.InFlight()
	if err != nil {
		return Activity{}, err
	}
	for _, m := range markers {
		if now.Sub(m.Since) >= inFlightMax {
			a.Expired++
			continue
		}
		if a.InFlight == "" || m.Since.After(a.InFlightSince) {
			a.InFlight, a.InFlightSince = m.Tool, m.Since
			if a.InFlight == "" {
				a.InFlight = "unknown"
			}
		}
	}
	if a.InFlight == "" {
		if w, err := d.ReadWait(); err == nil && !w.Future(now) && now.Before(w.Until) && now.Sub(w.DeclaredAt) < inFlightMax {
			a.InFlight, a.InFlightSince = truncate(WaitPrefix+w.Reason, maxToolName), w.DeclaredAt
		}
	}
	if a.InFlight != "" {
		a.Age = 0
		return a, nil
	}
	if lerr != nil {
		return Activity{}, fmt.Errorf("no activity evidence in %s: %w", d.Worktree, lerr)
	}
	return a, nil
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
