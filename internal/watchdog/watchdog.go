// Package watchdog reaps orphan heartbeat loops: loops whose worktree (or
// its .gyrum/lease.json) is gone get SIGTERM, then SIGKILL after a grace
// period. It reads the registry of running loops ($GYRUM_HOME/run) and, on
// Linux, also scans /proc for `gyrum heartbeat run` processes that never
// registered. A registry entry whose pid is dead, or now belongs to another
// process (start time or command line differ), is removed, and that process
// is never signalled.
package watchdog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/proc"
)

// DefaultGrace is how long a loop has to exit after SIGTERM before SIGKILL.
const DefaultGrace = 5 * time.Second

// Options configures Sweep.
type Options struct {
	// Registry is the registry of running loops ($GYRUM_HOME/run).
	Registry gyrumdir.Registry
	// Grace is the wait between SIGTERM and SIGKILL; 0 → DefaultGrace.
	Grace time.Duration
	// DryRun reports what would be done and signals and removes nothing.
	DryRun bool
	// NoScan skips the /proc scan for loops that never registered.
	NoScan bool
	// Within, when set, limits the /proc scan to loops whose worktree is
	// this directory or inside it (the registry is always swept whole).
	Within string
	// Logger receives one record per action; nil → discard.
	Logger *slog.Logger
	// Agents is the hook's agent index ($GYRUM_HOME/agents): entries of
	// agents that are gone are pruned (not with DryRun). Zero: skipped.
	Agents gyrumdir.AgentIndex
	// Prepared is the set of worktrees the hook may write into
	// ($GYRUM_HOME/worktrees): those whose lease.json is gone are pruned
	// (not with DryRun). Zero: skipped.
	Prepared gyrumdir.Prepared
}

// Actions of a Loop.
const (
	ActionKept        = "kept"         // a live loop whose worktree and lease are present
	ActionStopped     = "stopped"      // an orphan loop, ended (Result says how)
	ActionWouldStop   = "would-stop"   // DryRun: an orphan loop that would be stopped
	ActionRemoved     = "removed"      // a stale registry entry, removed
	ActionWouldRemove = "would-remove" // DryRun: a stale entry that would be removed
	ActionSkipped     = "skipped"      // something the sweep cannot judge, left alone
	ActionFailed      = "failed"       // the action failed (Error says why)
)

// Sources of a Loop.
const (
	SourceRegistry = "registry" // found in the registry
	SourceProc     = "proc"     // found by the /proc scan, never registered
)

// Loop is what the sweep found and did about one loop or registry entry.
type Loop struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"start_time,omitempty"`
	Dir       string `json:"dir,omitempty"`
	Ticket    string `json:"ticket,omitempty"`
	Source    string `json:"source"`
	Action    string `json:"action"`
	Reason    string `json:"reason"`
	// Result says how a stopped loop ended: terminated (SIGTERM) or
	// killed (SIGKILL after the grace period), or not running.
	Result string `json:"result,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Summary counts the loops of a Report by outcome.
type Summary struct {
	Checked int `json:"checked"`
	Kept    int `json:"kept"`
	Stopped int `json:"stopped"` // or, with DryRun, would be stopped
	Removed int `json:"removed"` // stale entries (or, with DryRun, would be removed)
	Skipped int `json:"skipped"`
	Failed  int `json:"failed"`
}

// Report is the outcome of one sweep.
type Report struct {
	DryRun  bool    `json:"dry_run"`
	Loops   []Loop  `json:"loops"`
	Summary Summary `json:"summary"`
	// AgentsPruned counts agent index entries of dead agents removed.
	AgentsPruned int `json:"agents_pruned"`
	// WorktreesPruned counts prepared worktrees forgotten because their
	// lease.json is gone.
	WorktreesPruned int `json:"worktrees_pruned"`
}

// Reasons of the decisions, shared by the text and JSON output.
const (
	reasonWorktreeGone = "worktree is gone"
	reasonLeaseGone    = "lease.json is gone"
	reasonPresent      = "worktree and lease.json present"
	reasonDead         = "process is gone"
	reasonRecycled     = "pid now belongs to another process (start time differs)"
	reasonCorrupt      = "entry is corrupt"
)

// Sweep checks every registered loop (and on Linux every unregistered
// `gyrum heartbeat run` of this user) once, stops the orphans, removes the
// stale entries, and reports what it did. Orphans are stopped concurrently,
// so one loop ignoring SIGTERM delays the sweep by one grace period, not
// one per loop. The error is for a registry that cannot be read at all;
// failures on single loops are in the report.
func Sweep(ctx context.Context, o Options) (Report, error) {
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	rep := Report{DryRun: o.DryRun, Loops: []Loop{}}
	entries, bad, err := o.Registry.List()
	if err != nil {
		return rep, err
	}

	stops := judgeAll(o, &rep, entries, bad, log)
	if o.DryRun {
		for _, i := range stops {
			rep.Loops[i].Action = ActionWouldStop
		}
	} else {
		prune(o, &rep, log)
		var wg sync.WaitGroup
		for _, i := range stops {
			wg.Add(1)
			go func(l *Loop) {
				defer wg.Done()
				stopLoop(ctx, o, l)
			}(&rep.Loops[i])
		}
		wg.Wait()
	}
	for _, l := range rep.Loops {
		log.Info("watchdog", "pid", l.PID, "dir", l.Dir, "ticket", l.Ticket, "source", l.Source, "action", l.Action, "reason", l.Reason, "result", l.Result, "err", l.Error)
	}
	sort.SliceStable(rep.Loops, func(i, j int) bool { return rep.Loops[i].PID < rep.Loops[j].PID })
	rep.Summary = summarize(rep.Loops)
	return rep, nil
}

// judgeAll judges every registry entry (bad ones are removed) and, unless
// o.NoScan, every loop /proc shows that no entry names, into rep.Loops; it
// returns the indexes of the loops to stop.
func judgeAll(o Options, rep *Report, entries []gyrumdir.Entry, bad []gyrumdir.BadEntry, log *slog.Logger) []int {
	var stops []int
	handled := map[int]bool{}
	for _, b := range bad {
		rep.Loops = append(rep.Loops, sweepBadEntry(o, b))
	}
	for _, e := range entries {
		l, stop := judgeEntry(o, e)
		if l.Action == ActionKept || stop {
			handled[e.PID] = true
		}
		rep.Loops = append(rep.Loops, l)
		if stop {
			stops = append(stops, len(rep.Loops)-1)
		}
	}
	if o.NoScan {
		return stops
	}
	found, err := scanLoops()
	if err != nil {
		log.Warn("watchdog: /proc scan failed", "err", err)
	}
	self := os.Getpid()
	for _, c := range found {
		if handled[c.id.PID] || c.id.PID == self || o.Within != "" && !inside(c.dir, o.Within) {
			continue
		}
		l, stop := judgeLoop(c.id, c.dir, "", SourceProc)
		rep.Loops = append(rep.Loops, l)
		if stop {
			stops = append(stops, len(rep.Loops)-1)
		}
	}
	return stops
}

// prune removes the agent index's and the prepared worktrees' entries of
// what is gone.
func prune(o Options, rep *Report, log *slog.Logger) {
	if o.Agents != (gyrumdir.AgentIndex{}) {
		n, err := o.Agents.Prune()
		if err != nil {
			log.Warn("watchdog: prune the agent index", "err", err)
		}
		rep.AgentsPruned = n
	}
	if o.Prepared != (gyrumdir.Prepared{}) {
		n, err := o.Prepared.Prune()
		if err != nil {
			log.Warn("watchdog: prune the prepared worktrees", "err", err)
		}
		rep.WorktreesPruned = n
	}
}

// judgeEntry decides about one registry entry: remove it when its process
// is not (any more) the loop it names, else judge the loop.
func judgeEntry(o Options, e gyrumdir.Entry) (Loop, bool) {
	l := Loop{PID: e.PID, StartTime: e.StartTime, Dir: e.Dir, Ticket: e.Ticket, Source: SourceRegistry}
	cur, err := proc.Lookup(e.PID)
	switch {
	case errors.Is(err, proc.ErrNoProcess):
		return removeEntry(o, l, reasonDead), false
	case err != nil:
		l.Action, l.Reason, l.Error = ActionSkipped, "cannot read the process", err.Error()
		return l, false
	case cur.StartTime != e.StartTime:
		return removeEntry(o, l, reasonRecycled), false
	}
	argv, err := proc.Cmdline(e.PID)
	if errors.Is(err, proc.ErrNoProcess) {
		return removeEntry(o, l, reasonDead), false
	}
	if err != nil {
		l.Action, l.Reason, l.Error = ActionSkipped, "cannot read the command line", err.Error()
		return l, false
	}
	dir, ok := LoopDir(argv)
	if ok && !filepath.IsAbs(dir) {
		// The entry was written by the loop itself with its absolute
		// worktree; a relative --dir matches when it resolves there, or,
		// once the directory it was resolved against is gone, when it ends
		// the entry's path.
		ok = sameDir(resolveDir(e.PID, dir), e.Dir) || endsWithPath(e.Dir, dir)
	} else if ok {
		ok = sameDir(dir, e.Dir)
	}
	if !ok {
		return removeEntry(o, l, fmt.Sprintf("pid runs something else, not a gyrum heartbeat run of this dir: %s", clip(strings.Join(argv, " ")))), false
	}
	return judgeLoop(e.Identity(), e.Dir, e.Ticket, SourceRegistry)
}

// judgeLoop decides about a live loop of dir: stop it when the worktree or
// its lease.json is gone.
func judgeLoop(id proc.Identity, dir, ticket, source string) (Loop, bool) {
	l := Loop{PID: id.PID, StartTime: id.StartTime, Dir: dir, Ticket: ticket, Source: source}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		l.Action, l.Reason = ActionStopped, reasonWorktreeGone
		return l, true
	} else if err != nil {
		l.Action, l.Reason, l.Error = ActionSkipped, "cannot check the worktree", err.Error()
		return l, false
	}
	lease := filepath.Join(dir, gyrumdir.DirName, gyrumdir.LeaseFile)
	if _, err := os.Stat(lease); errors.Is(err, fs.ErrNotExist) {
		l.Action, l.Reason = ActionStopped, reasonLeaseGone
		return l, true
	} else if err != nil {
		l.Action, l.Reason, l.Error = ActionSkipped, "cannot check lease.json", err.Error()
		return l, false
	}
	if l.Ticket == "" {
		if le, err := (gyrumdir.Dir{Worktree: dir, Path: filepath.Join(dir, gyrumdir.DirName)}).ReadLease(); err == nil {
			l.Ticket = le.Ticket
		}
	}
	l.Action, l.Reason = ActionKept, reasonPresent
	return l, false
}

// removeEntry removes (or with DryRun, would remove) a stale entry. The
// process behind it is never signalled.
func removeEntry(o Options, l Loop, reason string) Loop {
	l.Reason = reason
	if o.DryRun {
		l.Action = ActionWouldRemove
		return l
	}
	// Only the entry that was judged: a new loop that took the pid and
	// wrote its own entry since the sweep read it keeps that entry (a
	// corrupt one, judged with start time 0, goes whatever it holds unless
	// it became a readable entry).
	removed, err := o.Registry.Remove(proc.Identity{PID: l.PID, StartTime: l.StartTime})
	if err != nil {
		l.Action, l.Error = ActionFailed, err.Error()
		return l
	}
	if !removed {
		if _, err := o.Registry.Read(l.PID); err == nil {
			l.Action, l.Reason = ActionSkipped, "the entry was rewritten since the sweep read it (a new loop has the pid): left alone"
			return l
		}
	}
	l.Action = ActionRemoved
	return l
}

// sweepBadEntry removes a corrupt <pid>.json; other files are left alone.
func sweepBadEntry(o Options, b gyrumdir.BadEntry) Loop {
	name := filepath.Base(b.Path)
	var pid int
	if _, err := fmt.Sscanf(name, "%d.json", &pid); err != nil || fmt.Sprintf("%d.json", pid) != name || pid <= 0 {
		return Loop{Source: SourceRegistry, Dir: b.Path, Action: ActionSkipped, Reason: "not a registry entry file", Error: b.Err.Error()}
	}
	l := Loop{PID: pid, Source: SourceRegistry, Error: b.Err.Error()}
	l = removeEntry(o, l, reasonCorrupt)
	if l.Action != ActionFailed {
		l.Error = b.Err.Error()
	}
	return l
}

// stopLoop ends an orphan loop (identity-checked: a pid that changed hands
// in the meantime is not signalled) and removes its registry entry, which a
// SIGKILLed loop cannot remove itself.
func stopLoop(ctx context.Context, o Options, l *Loop) {
	id := proc.Identity{PID: l.PID, StartTime: l.StartTime}
	res, err := proc.Stop(ctx, id, o.Grace)
	l.Result = res.String()
	if err != nil {
		l.Action, l.Error = ActionFailed, err.Error()
		return
	}
	if l.Source == SourceRegistry {
		if _, err := o.Registry.Remove(id); err != nil {
			l.Error = err.Error()
		}
	}
	// Only lease.json may be gone: the pid file of a SIGKILLed loop would
	// stay behind and name a dead process.
	d := gyrumdir.Dir{Worktree: l.Dir, Path: filepath.Join(l.Dir, gyrumdir.DirName)}
	if _, err := d.RemovePIDIf(gyrumdir.LoopPIDFile, id); err != nil && !errors.Is(err, fs.ErrNotExist) && l.Error == "" {
		l.Error = err.Error()
	}
}

func summarize(loops []Loop) Summary {
	s := Summary{Checked: len(loops)}
	for _, l := range loops {
		switch l.Action {
		case ActionKept:
			s.Kept++
		case ActionStopped, ActionWouldStop:
			s.Stopped++
		case ActionRemoved, ActionWouldRemove:
			s.Removed++
		case ActionSkipped:
			s.Skipped++
		case ActionFailed:
			s.Failed++
		}
	}
	return s
}

// LoopDir returns the --dir of a `gyrum heartbeat run` command line, ok
// false when argv is not one: the program must be named gyrum (or
// gyrum-loop, which earlier versions spawned and which may still run
// during an upgrade) and its first two arguments that are not flags must
// be heartbeat run. A loop run
// without --dir works on its current directory: dir is "." then.
func LoopDir(argv []string) (dir string, ok bool) {
	if len(argv) < 3 || (filepath.Base(argv[0]) != "gyrum" && filepath.Base(argv[0]) != "gyrum-loop") {
		return "", false
	}
	var words []string
	dir = "."
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--dir" || a == "-dir":
			if i+1 < len(argv) {
				dir = argv[i+1]
				i++
			}
		case strings.HasPrefix(a, "--dir="):
			dir = strings.TrimPrefix(a, "--dir=")
		case strings.HasPrefix(a, "-"):
		default:
			words = append(words, a)
		}
	}
	if len(words) < 2 || words[0] != "heartbeat" || words[1] != "run" {
		return "", false
	}
	return dir, true
}

// sameDir reports whether a and b name one directory: equal paths, or
// paths that resolve to the same place through symlinks (a relative --dir
// resolved against /proc/PID/cwd comes back physical).
func sameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// endsWithPath reports whether the relative path rel names the last
// elements of abs.
func endsWithPath(abs, rel string) bool {
	abs, rel = filepath.Clean(abs), filepath.Clean(rel)
	return rel == "." || strings.HasSuffix(abs, string(filepath.Separator)+rel)
}

// inside reports whether path is root or below it.
func inside(path, root string) bool {
	rel, err := filepath.Rel(filepath.Clean(root), filepath.Clean(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}

// WriteText writes rep as one line per loop and a summary line.
func WriteText(w io.Writer, rep Report) error {
	var b strings.Builder
	for _, l := range rep.Loops {
		who := fmt.Sprintf("pid %d", l.PID)
		if l.PID == 0 {
			who = "file"
		}
		if l.Ticket != "" {
			who += " " + l.Ticket
		}
		fmt.Fprintf(&b, "%-12s %s %s: %s", l.Action, who, l.Dir, l.Reason)
		if l.Source == SourceProc {
			b.WriteString(" (unregistered loop)")
		}
		if l.Action == ActionStopped && l.Result != "" {
			fmt.Fprintf(&b, " (%s)", l.Result)
		}
		if l.Error != "" {
			fmt.Fprintf(&b, ": %s", l.Error)
		}
		b.WriteByte('\n')
	}
	s := rep.Summary
	verb, rem := "stopped", "removed"
	if rep.DryRun {
		verb, rem = "would stop", "would remove"
	}
	fmt.Fprintf(&b, "watchdog: %d checked, %d kept, %s %d, %s %d stale entries", s.Checked, s.Kept, verb, s.Stopped, rem, s.Removed)
	if s.Skipped > 0 {
		fmt.Fprintf(&b, ", %d skipped", s.Skipped)
	}
	if s.Failed > 0 {
		fmt.Fprintf(&b, ", %d failed", s.Failed)
	}
	if rep.DryRun {
		b.WriteString(" (dry run: nothing was signalled or removed)")
	}
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes rep as indented JSON.
func WriteJSON(w io.Writer, rep Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}
