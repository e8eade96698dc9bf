package gyrumdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gyrum-labs/warp/internal/proc"
)

// Home returns $GYRUM_HOME, or ~/.gyrum when it is unset. getenv is
// os.Getenv outside tests.
func Home(getenv func(string) string) (string, error) {
	if h := getenv("GYRUM_HOME"); h != "" {
		return filepath.Abs(h)
	}
	home := getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", fmt.Errorf("GYRUM_HOME and HOME are unset: %w", err)
		}
	}
	return filepath.Join(home, ".gyrum"), nil
}

// Entry is one registry file, $GYRUM_HOME/run/<pid>.json: a running loop.
type Entry struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"start_time"`
	Dir       string `json:"dir"` // the worktree
	Ticket    string `json:"ticket"`
}

// Identity returns the loop's process identity.
func (e Entry) Identity() proc.Identity { return proc.Identity{PID: e.PID, StartTime: e.StartTime} }

// BadEntry is a registry file that could not be used; List reports it
// instead of failing.
type BadEntry struct {
	Path string
	Err  error
}

// Registry is the directory of running loops on this host: each loop adds
// its entry at start and removes it at exit; the watchdog and `gyrum
// status` read it.
type Registry struct {
	dir string
}

// NewRegistry returns the registry under home ($GYRUM_HOME): home/run.
func NewRegistry(home string) Registry { return Registry{dir: filepath.Join(home, "run")} }

// Dir returns the registry directory.
func (r Registry) Dir() string { return r.dir }

func (r Registry) path(pid int) string { return filepath.Join(r.dir, strconv.Itoa(pid)+".json") }

// Add writes e's entry atomically, creating the directory (0700) first.
func (r Registry) Add(e Entry) error {
	if e.PID <= 0 {
		return fmt.Errorf("registry add: pid %d is not positive", e.PID)
	}
	if err := os.MkdirAll(r.dir, DirPerm); err != nil {
		return fmt.Errorf("registry add: %w", err)
	}
	data, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("registry add: %w", err)
	}
	return WriteFileAtomic(r.path(e.PID), append(data, '\n'))
}

// Read returns the entry of pid. Missing wraps fs.ErrNotExist, unusable
// content wraps ErrCorrupt.
func (r Registry) Read(pid int) (Entry, error) {
	p := r.path(pid)
	data, err := readSmall(p, maxSmallFile)
	if err != nil {
		return Entry{}, err
	}
	var e Entry
	if err := json.Unmarshal(data, &e); err != nil {
		return Entry{}, fmt.Errorf("%w: %s: %v", ErrCorrupt, p, err)
	}
	if e.PID != pid {
		return Entry{}, fmt.Errorf("%w: %s: pid %d does not match the file name", ErrCorrupt, p, e.PID)
	}
	if e.Dir == "" {
		return Entry{}, fmt.Errorf("%w: %s: no dir", ErrCorrupt, p)
	}
	return e, nil
}

// Remove removes the entry of id.PID only while it names id (same start
// time), so a late exit never removes a successor's entry. It reports
// whether it removed something. A corrupt entry of that pid is removed.
func (r Registry) Remove(id proc.Identity) (bool, error) {
	e, err := r.Read(id.PID)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err == nil && e.Identity() != id {
		return false, nil
	}
	if err := os.Remove(r.path(id.PID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("registry remove: %w", err)
	}
	return true, nil
}

// List returns every usable entry, ordered by pid, and every file of the
// registry directory that is not one (bad name, unreadable, corrupt). A
// missing directory is an empty registry.
func (r Registry) List() ([]Entry, []BadEntry, error) {
	ents, err := os.ReadDir(r.dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("list registry: %w", err)
	}
	var good []Entry
	var bad []BadEntry
	for _, de := range ents {
		name := de.Name()
		if strings.HasPrefix(name, ".") { // temp files of WriteFileAtomic
			continue
		}
		p := filepath.Join(r.dir, name)
		pid, err := strconv.Atoi(strings.TrimSuffix(name, ".json"))
		if !strings.HasSuffix(name, ".json") || err != nil || pid <= 0 {
			bad = append(bad, BadEntry{Path: p, Err: fmt.Errorf("%w: %s: want <pid>.json", ErrCorrupt, p)})
			continue
		}
		e, err := r.Read(pid)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed meanwhile
			}
			bad = append(bad, BadEntry{Path: p, Err: err})
			continue
		}
		good = append(good, e)
	}
	sort.Slice(good, func(i, j int) bool { return good[i].PID < good[j].PID })
	return good, bad, nil
}
