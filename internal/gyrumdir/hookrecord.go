package gyrumdir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// The activity record and the hook-event counter (hook health).
//
// last-activity keeps its contract — its mtime is the activity signal — and
// now also holds one short JSON line saying who wrote it last:
//
//	{"src":"hook","event":"PostToolUse","tool":"Bash","at":"2026-05-06T12:00:00.123456789Z"}
//
// padded with spaces to RecordSize bytes, its last field a checksum:
//
//	{"src":"hook",...,"at":"...","sum":"1c291ca3"}
//
// "sum" is the CRC-32C (hex) of the record as it is without that field.
// The record is written in place (one pwrite at offset 0 of a fixed-size
// buffer, then the mtime is set), never truncated: a reader never sees an
// empty file. A read that races a write can see part of each record; the
// sum tells, and the reader reads again (ReadActivity), so a record is
// read whole or not at all. Replacing the file instead (a temporary file
// renamed over it) would be atomic without a sum, but on ext4 a rename
// over an existing file starts writeback of the new one and cost the hook
// 0.8 ms per call, half again its whole run (BenchmarkWriteActivity).
//
// hook-events counts hook invocations: every run of the hook appends one
// byte with O_APPEND, which the kernel makes atomic across processes, so
// concurrent hooks (parallel tool calls) never lose a count the way a
// read-increment-write counter would. The loop reads its size; it rotates
// the file to hook-events.1 once it passes HookEventsRotate bytes and
// counts the bytes that late writers still add to the old file, so the
// count is exact except for a hook that stalls between its open and its
// one-byte write for longer than a loop interval.

// Files of the hook health signals.
const (
	// HookEventsFile gets one byte appended per hook invocation.
	HookEventsFile = "hook-events"
	// HookEventsOld is where the loop rotates HookEventsFile.
	HookEventsOld = HookEventsFile + ".1"
)

// RecordSize is the size of the activity record in last-activity,
// newline included.
const RecordSize = 256

// HookEventsRotate is the size at which the loop rotates hook-events.
const HookEventsRotate = 4096

// Sources of an activity record.
const (
	SourceHook      = "hook"       // gyrum touch-activity
	SourceStartWork = "start-work" // the claim counts as activity
	SourceWait      = "wait"       // gyrum wait --done
)

// ActivityRecord is the content of last-activity.
type ActivityRecord struct {
	Source string    `json:"src"`
	Event  string    `json:"event,omitempty"` // hook_event_name; empty for a plain call
	Tool   string    `json:"tool,omitempty"`
	At     time.Time `json:"at"`
}

// encodeRecord returns r as a RecordSize line with its sum; event and tool
// are cut when the line would not fit (escapes can grow them). It writes
// the JSON itself (appendRecord): the hook runs it once per process, where
// encoding/json's first Marshal of a struct (reflecting its fields,
// building its encoder) costs more than the whole record.
func encodeRecord(r ActivityRecord) []byte {
	r.Event, r.Tool = truncate(r.Event, 64), truncate(r.Tool, 120)
	r.At = r.At.UTC()
	buf := make([]byte, 0, RecordSize)
	for range 3 {
		buf = appendRecord(buf[:0], r)
		if len(buf)+len(sumField) < RecordSize {
			break
		}
		if r.Tool != "" {
			r.Tool = ""
		} else {
			r.Event = ""
		}
	}
	buf = appendSum(buf)
	buf = buf[:min(len(buf), RecordSize-1)]
	for len(buf) < RecordSize-1 {
		buf = append(buf, ' ')
	}
	return append(buf, '\n')
}

// sumField is the checksum field's shape: `,"sum":"` 8 hex digits `"`.
const sumField = `,"sum":"00000000"`

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendSum adds the sum field to record, a JSON object that ends in '}'.
func appendSum(record []byte) []byte {
	const hex = "0123456789abcdef"
	sum := crc32.Checksum(record, castagnoli)
	record = append(record[:len(record)-1], `,"sum":"`...)
	for shift := 28; shift >= 0; shift -= 4 {
		record = append(record, hex[sum>>shift&0xf])
	}
	return append(record, `"}`...)
}

// checkSum returns line, a record with its sum field, without that field,
// and whether the sum matches.
func checkSum(line []byte) ([]byte, bool) {
	line = bytes.TrimRight(line, " ")
	if len(line) < len(sumField)+2 || !bytes.HasSuffix(line, []byte(`"}`)) {
		return nil, false
	}
	i := len(line) - 1 - len(sumField)
	if !bytes.HasPrefix(line[i:], []byte(`,"sum":"`)) {
		return nil, false
	}
	record := append(line[:i:i], '}')
	if !bytes.Equal(appendSum(bytes.Clone(record)), line) {
		return nil, false
	}
	return record, true
}

// appendRecord appends r as the one-line JSON object json.Marshal would
// write for it (the same keys, omitempty, RFC 3339 time with nanoseconds).
func appendRecord(b []byte, r ActivityRecord) []byte {
	b = append(b, `{"src":`...)
	b = appendJSONString(b, r.Source)
	if r.Event != "" {
		b = append(b, `,"event":`...)
		b = appendJSONString(b, r.Event)
	}
	if r.Tool != "" {
		b = append(b, `,"tool":`...)
		b = appendJSONString(b, r.Tool)
	}
	b = append(b, `,"at":"`...)
	b = r.At.AppendFormat(b, time.RFC3339Nano)
	return append(b, `"}`...)
}

// appendJSONString appends s as a JSON string: quote, backslash and control
// characters escaped, invalid UTF-8 replaced by U+FFFD (as encoding/json
// does); everything else as it is.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// WriteActivity writes r into last-activity in place and sets its mtime to
// r.At: the activity signal moves exactly as TouchActivity moves it. The
// file is created when missing. Plain system calls, no *os.File: the hook
// writes two files per run, and the first *os.File of a process sets up
// the runtime's poller (an epoll instance, an eventfd) for nothing.
func (d Dir) WriteActivity(r ActivityRecord) error {
	p := d.file(ActivityFile)
	fd, err := openRaw(p, os.O_WRONLY|os.O_CREATE, FilePerm)
	if err != nil {
		return fmt.Errorf("write activity: %w", err)
	}
	werr := writeFull(fd, p, encodeRecord(r), 0)
	cerr := unix.Close(fd)
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("write activity: %w", err)
	}
	if err := setTimes(p, r.At); err != nil {
		return fmt.Errorf("write activity: %w", err)
	}
	return nil
}

// CountHookEvent appends one byte to hook-events (created when missing).
func (d Dir) CountHookEvent() error {
	p := d.file(HookEventsFile)
	fd, err := openRaw(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, FilePerm)
	if err != nil {
		return fmt.Errorf("count hook event: %w", err)
	}
	werr := writeFull(fd, p, []byte{'.'}, -1)
	cerr := unix.Close(fd)
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("count hook event: %w", err)
	}
	return nil
}

// ReadActivity returns the record in last-activity and the file's mtime.
// A file without a record (written by a gyrum from before records, or
// touched by something else) gives ok false and the mtime. Missing wraps
// fs.ErrNotExist.
func (d Dir) ReadActivity() (rec ActivityRecord, ok bool, mtime time.Time, err error) {
	p := d.file(ActivityFile)
	fd, st, err := openStat(p, os.O_RDONLY, 0)
	if err != nil {
		return ActivityRecord{}, false, time.Time{}, fmt.Errorf("read activity: %w", err)
	}
	defer unix.Close(fd)
	at := modTime(&st)
	buf := make([]byte, RecordSize)
	for range maxTornReads {
		n, err := preadFull(fd, p, buf, 0)
		if err != nil {
			return ActivityRecord{}, false, at, fmt.Errorf("read activity: %w", err)
		}
		line := buf[:n]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		record, whole := checkSum(line)
		if !whole {
			// A write raced this read, or the file holds no record of
			// ours: an older gyrum's (no sum), something else's. Read again
			// in case it was the race.
			continue
		}
		if json.Unmarshal(record, &rec) == nil && rec.Source != "" && !rec.At.IsZero() {
			return rec, true, at, nil
		}
		break
	}
	return ActivityRecord{}, false, at, nil
}

// maxTornReads bounds the reads of a record writes keep racing.
const maxTornReads = 8

// recordSlack is how far the mtime may lie past a record's time and still
// be that record's write (file systems with coarse timestamps).
const recordSlack = 2 * time.Second

// HookFiredSince reports whether last-activity shows a hook run after
// start: a hook record written after start, or an mtime after start that
// no record explains — the file has no record (an older gyrum's hook only
// touches it) or its mtime moved past the record's time (touched without a
// rewrite). Records of start-work and wait are not hook runs. A missing
// file is false.
func (d Dir) HookFiredSince(start time.Time) (bool, error) {
	rec, ok, mtime, err := d.ReadActivity()
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !mtime.After(start) {
		return false, nil
	}
	if !ok {
		return true, nil
	}
	if rec.Source == SourceHook {
		return true, nil
	}
	return mtime.After(rec.At.Add(recordSlack)), nil
}

// HookCounter reads hook-events for the loop: Take returns how many hook
// events were appended since the previous Take (or since the counter was
// made) and rotates the file when it grew past HookEventsRotate bytes.
// It is not safe for concurrent use; one loop owns it.
type HookCounter struct {
	d    Dir
	base int64 // bytes of hook-events already counted
	// old is the size of hook-events.1 at rotation, -1 when there is none
	// to look at.
	old int64
}

// NewHookCounter returns a counter that starts from the events already in
// hook-events: only later ones are counted.
func (d Dir) NewHookCounter() (*HookCounter, error) {
	n, err := fileSize(d.file(HookEventsFile))
	if err != nil {
		return nil, fmt.Errorf("hook events: %w", err)
	}
	return &HookCounter{d: d, base: n, old: -1}, nil
}

// late returns what writers that opened hook-events before the last
// rotation added to hook-events.1 since the previous look.
func (c *HookCounter) late() (int64, error) {
	if c.old < 0 {
		return 0, nil
	}
	n, err := fileSize(c.d.file(HookEventsOld))
	if err != nil {
		return 0, fmt.Errorf("hook events: %w", err)
	}
	delta := max(n-c.old, 0)
	c.old = max(n, c.old)
	return delta, nil
}

// Take returns the events since the previous Take and marks them counted.
func (c *HookCounter) Take() (int64, error) {
	p := c.d.file(HookEventsFile)
	n, err := fileSize(p)
	if err != nil {
		return 0, fmt.Errorf("hook events: %w", err)
	}
	late, err := c.late()
	if err != nil {
		return 0, err
	}
	if n < c.base {
		c.base = 0
	}
	got := n - c.base + late
	c.base = n
	if n >= HookEventsRotate {
		// The previous old file has been read up to now and had a whole
		// rotation cycle for late writers: it is done. Keeping it that long
		// (not one Take) is what makes the count exact unless a hook stalls
		// between open and write for a whole cycle of HookEventsRotate events.
		if err := os.Remove(c.d.file(HookEventsOld)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return got, fmt.Errorf("hook events: %w", err)
		}
		if err := os.Rename(p, c.d.file(HookEventsOld)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return got, fmt.Errorf("hook events: rotate: %w", err)
		}
		// Bytes that land in the old file from now on are late events.
		// Hooks that open after the rename create a fresh hook-events.
		if m, err := fileSize(c.d.file(HookEventsOld)); err == nil {
			got += max(m-n, 0)
			c.old = m
		} else {
			c.old = n
		}
		c.base = 0
	}
	return got, nil
}

// fileSize is the size of path, 0 when it is missing.
func fileSize(path string) (int64, error) {
	st, err := lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return st.Size, nil
}
