// Package doctor checks that the agent side is wired on this host and says
// how to fix what is not: the touch-activity hook in the effective Claude
// Code settings and the gyrum binary it runs, the trust the other agents
// need before they run the hooks setup gave them (Codex, Gemini CLI), a live run of each hook
// command line (exit 0 within its timeout, activity file moved), the
// watchdog schedule, the warp server (reachable, speaking heartbeat v2),
// and the loop of every local lease (alive, matching its pid file).
package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/agent"
	"github.com/gyrum-labs/warp/internal/agent/trust"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/proc"
	"github.com/gyrum-labs/warp/internal/setup"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/watchdog"
)

// ProbeTicket is the ticket of the heartbeat doctor sends to learn whether
// the server speaks v2. It is never created, so the server answers 404
// not_found after validating the body (a v1-only server answers 400
// unsupported_schema_version first) and records nothing.
const ProbeTicket = "gyrum-doctor-probe"

// Statuses of a Check.
const (
	StatusOK   = "ok"
	StatusFail = "fail"
	StatusSkip = "skip" // could not be checked because an earlier check failed
	// StatusWarn: a gap in defence, not a fault: doctor still exits 0.
	StatusWarn = "warn"
)

// Check is one verdict of doctor.
type Check struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"` // one line: what to run or change
	// Command is the shell command line that fixes the check on its own,
	// as Fix names it, to run as the same user with the same environment;
	// empty when the fix needs a person (edit a file, pick a token, trust
	// a hook in the agent, ask an administrator).
	Command string `json:"command,omitempty"`
}

// Report is every check; OK is false when any failed (a warning leaves it
// true).
type Report struct {
	OK     bool    `json:"ok"`
	Checks []Check `json:"checks"`
}

// Options configures Run.
type Options struct {
	// Home is the user's home directory.
	Home string
	// Getenv reads the variables that move an agent's files
	// ($CLAUDE_CONFIG_DIR; $CODEX_HOME, where Codex keeps its hooks and
	// their trust); nil reads none.
	Getenv func(string) string
	// Cwd is the project whose .claude/settings.json and
	// .claude/settings.local.json count too, and where a local lease is
	// looked for.
	Cwd string
	// WarpURL and WarpToken are the server doctor probes (WARP_URL,
	// WARP_TOKEN; "" → client.DefaultURL).
	WarpURL   string
	WarpToken string
	// Registry is the registry of running loops ($GYRUM_HOME/run).
	Registry gyrumdir.Registry
	// Prepared is $GYRUM_HOME/worktrees, where the self-test records its
	// scratch worktree so the hook writes into it; zero: not recorded.
	Prepared gyrumdir.Prepared
	// Systemd and Cron are where the watchdog schedule is looked for.
	Systemd setup.Systemd
	Cron    setup.Cron
	// Timeout bounds the server probe; 0 → 5 s.
	Timeout time.Duration
	// ManagedSettings are the administrator's settings files, which win
	// over every other; nil → the default agent's Managed files of this
	// platform.
	ManagedSettings []string
	// Binary is this gyrum ("" → os.Executable()): a hook command only the
	// project's settings name is self-tested only when it runs this gyrum
	// or the gyrum-hook beside it.
	Binary string
}

// Run performs every check.
func Run(ctx context.Context, o Options) Report {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	var checks []Check
	hook, commands := checkHook(o)
	checks = append(checks, hook)
	checks = append(checks, checkHookBinary(commands, hook.Status == StatusOK))
	checks = append(checks, checkAgentTrust(o)...)
	agentHooks, agentSettings := checkAgentHooks(o)
	checks = append(checks, agentHooks...)
	plugins, unreadable := pluginFiles(o)
	checks = append(checks, checkPlugins(plugins, unreadable)...)
	binary := o.Binary
	if binary == "" {
		binary, _ = os.Executable()
	}
	checks = append(checks, checkHookRuns(ctx, hookCommands(append(append(hookEntries(o), pluginHooks(plugins)...), agentSettings...)), o.Prepared, binary)...)
	checks = append(checks, checkWatchdog(ctx, o))
	checks = append(checks, checkWarp(ctx, o))
	checks = append(checks, checkLoops(o)...)
	rep := Report{OK: true, Checks: checks}
	for _, c := range checks {
		if c.Status == StatusFail {
			rep.OK = false
		}
	}
	return rep
}

// settingsFiles returns the settings files of the default agent
// (agent.Default, Claude Code) that apply in cwd, lowest precedence first.
func settingsFiles(o Options) []string {
	return agent.Default().Hooks.Files(o.Cwd, o.Home, o.Getenv)
}

// hookEntries reads our hook entries from every settings file that applies;
// unreadable and malformed files are checkHook's to report.
func hookEntries(o Options) []hookSettings {
	var out []hookSettings
	for i, path := range settingsFiles(o) {
		data, err := setup.ReadConfig(path)
		if err != nil {
			continue
		}
		if m, err := setup.HookEntries(path, data); err == nil {
			out = append(out, hookSettings{byEvent: m, project: i > 0}) // settingsFiles: the user's first
		}
	}
	return out
}

// checkHook looks for our hook, per event, in the merged settings (Claude
// Code runs the hooks of every file). It returns the hook commands found.
// Hooks switched off ("disableAllHooks": true, or managed settings that
// allow managed hooks only) fail the check whatever is wired.
func checkHook(o Options) (Check, []string) {
	c := Check{Name: "hook"}
	if off, fix := hooksDisabled(o); off != "" {
		c.Status, c.Detail, c.Fix = StatusFail, off, fix
		return c, nil
	}
	found := map[string]bool{}
	seen := map[string]bool{}
	var commands, read []string
	for _, path := range settingsFiles(o) {
		data, err := setup.ReadConfig(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			c.Status, c.Detail, c.Fix = StatusFail, fmt.Sprintf("cannot read %s: %v", path, err), "make the file readable by this user"
			return c, commands
		}
		byEvent, err := setup.HookCommands(path, data)
		if err != nil {
			c.Status, c.Detail, c.Fix = StatusFail, err.Error(), "fix the file (Claude Code cannot read it either), then run gyrum setup"
			return c, commands
		}
		read = append(read, path)
		for ev, cmds := range byEvent {
			found[ev] = true
			for _, cmd := range cmds {
				if !seen[cmd] {
					seen[cmd] = true
					commands = append(commands, cmd)
				}
			}
		}
	}
	var missing []string
	for _, ev := range setup.HookEvents() {
		if !found[ev] {
			missing = append(missing, ev)
		}
	}
	where := "(no settings file exists: " + strings.Join(settingsFiles(o), ", ") + ")"
	if len(read) > 0 {
		where = "in " + strings.Join(read, ", ")
	}
	if len(missing) > 0 {
		c.Status = StatusFail
		c.Detail = fmt.Sprintf("gyrum's hook (gyrum-hook or gyrum touch-activity) is not wired for %s %s", strings.Join(missing, ", "), where)
		c.Fix = "run gyrum setup (or gyrum setup --project DIR for this project only)"
		c.Command = "gyrum setup"
		return c, commands
	}
	c.Status = StatusOK
	c.Detail = fmt.Sprintf("gyrum's hook wired for %s %s", strings.Join(setup.HookEvents(), ", "), where)
	return c, commands
}

// checkHookBinary checks that every hook command's program exists and is
// executable.
func checkHookBinary(commands []string, hookOK bool) Check {
	c := Check{Name: "hook-binary"}
	if len(commands) == 0 {
		c.Status, c.Detail = StatusSkip, "no hook command to check"
		if hookOK {
			c.Status = StatusFail
		}
		return c
	}
	var bad, good []string
	for _, cmd := range commands {
		bin, _ := setup.HookBinary(cmd)
		path, err := resolveProgram(bin)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%q: %v", cmd, err))
			continue
		}
		good = append(good, path)
	}
	if len(bad) > 0 {
		c.Status = StatusFail
		c.Detail = "the hook cannot run: " + strings.Join(bad, "; ")
		c.Fix = "run gyrum setup with the gyrum you use now: it rewrites the hook with that binary's absolute path"
		c.Command = "gyrum setup"
		return c
	}
	c.Status = StatusOK
	c.Detail = "the hook runs " + strings.Join(good, ", ")
	return c
}

// resolveProgram finds bin as the shell running the hook would: an
// absolute path as is, a bare name on PATH. It must be an executable file.
func resolveProgram(bin string) (string, error) {
	path := bin
	if !strings.Contains(bin, "/") {
		p, err := exec.LookPath(bin)
		if err != nil {
			return "", fmt.Errorf("%s is not on PATH", bin)
		}
		path = p
	}
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s does not exist", path)
		}
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%s is not executable", path)
	}
	return path, nil
}

// checkWatchdog looks for the systemd timer (enabled) or the crontab line.
func checkWatchdog(ctx context.Context, o Options) Check {
	c := Check{Name: "watchdog"}
	var notes []string
	if o.Systemd.Available(ctx) {
		on, err := o.Systemd.TimerEnabled(ctx)
		if err == nil && on {
			c.Status, c.Detail = StatusOK, setup.TimerName+" is enabled (systemd user timer)"
			return c
		}
		notes = append(notes, setup.TimerName+" is not enabled")
	} else {
		notes = append(notes, "no systemd user manager")
	}
	if o.Cron.Available() {
		line, ok, err := o.Cron.Installed(ctx)
		switch {
		case err != nil:
			notes = append(notes, err.Error())
		case ok:
			c.Status, c.Detail = StatusOK, "crontab line: "+line
			return c
		default:
			notes = append(notes, "no "+setup.CronTag+" line in the crontab")
		}
	} else {
		notes = append(notes, "no crontab program")
	}
	// Not a failure: a loop exits by itself when its agent's process ends
	// or its worktree goes (the decision record's primary signal); the
	// watchdog is defence in depth.
	c.Status = StatusWarn
	c.Detail = "the watchdog is not scheduled (" + strings.Join(notes, "; ") + "): it stops heartbeat loops " +
		"whose worktree is gone and drops stale registry entries; loops still exit when their agent's process ends"
	const sweep = "gyrum watchdog sweep"
	if o.Systemd.Available(ctx) || o.Cron.Available() {
		c.Fix = "run gyrum setup (a systemd user timer, or a crontab line), or run " + sweep + " every few minutes yourself"
		c.Command = "gyrum setup"
	} else {
		c.Fix = "this host has no scheduler (no systemd user manager, no crontab): run " + sweep +
			" every few minutes yourself, or install cron (Debian: apt-get install cron) and run gyrum setup --watchdog cron"
	}
	return c
}

// checkWarp sends the v2 probe heartbeat: a probe (client.HeaderProbe),
// which warp checks like a heartbeat — the token, the body — and neither
// applies nor counts, so a doctor run leaves no trace in warp's metrics.
func checkWarp(ctx context.Context, o Options) Check {
	c := Check{Name: "warp"}
	url := o.WarpURL
	if url == "" {
		url = client.DefaultURL
	}
	api := client.NewClient(url, o.WarpToken).WithHTTPClient(&http.Client{Timeout: o.Timeout})
	v2 := 2
	age := 0.0
	host, _ := os.Hostname()
	p, err := api.ProbeHeartbeat(ctx, client.HeartbeatRequest{SchemaVersion: &v2, Ticket: ProbeTicket, Epoch: 1, Host: host, Agent: "gyrum-doctor", ActivityAgeS: &age})
	var ae *client.APIError
	switch {
	case err == nil && p.Probe:
		c.Status, c.Detail = StatusOK, fmt.Sprintf("%s answers and accepts schema_version 2 heartbeats", api.BaseURL())
	case err == nil, errors.Is(err, client.ErrNotFound), errors.Is(err, client.ErrStaleEpoch), errors.Is(err, client.ErrLeaseEnded):
		// A warp from before probes applied it as a heartbeat: any
		// answer past validation means the v2 body was understood.
		c.Status, c.Detail = StatusOK, fmt.Sprintf("%s answers and accepts schema_version 2 heartbeats (a warp from before probes: it counted this one as a heartbeat)", api.BaseURL())
	case errors.Is(err, client.ErrUnsupportedSchema):
		c.Status = StatusFail
		c.Detail = fmt.Sprintf("%s does not speak heartbeat v2: %s", api.BaseURL(), err)
		c.Fix = "upgrade warp on that server (loops fall back to v1 meanwhile, which activity mode does not count)"
	case errors.As(err, &ae) && (ae.Code == client.CodeUnauthorized || ae.Code == client.CodeForbidden):
		c.Status = StatusFail
		c.Detail = fmt.Sprintf("%s refused the token: %s", api.BaseURL(), ae.Message)
		c.Fix = "set WARP_TOKEN to an agent token of that server"
	case errors.As(err, &ae):
		c.Status = StatusFail
		c.Detail = fmt.Sprintf("%s answered the v2 probe with %d %s: %s", api.BaseURL(), ae.Status, ae.Code, ae.Message)
		c.Fix = "check that WARP_URL points at a warp server"
	default:
		c.Status = StatusFail
		c.Detail = fmt.Sprintf("cannot reach warp at %s: %v", api.BaseURL(), err)
		c.Fix = "start warp (warp serve) or set WARP_URL to where it runs"
	}
	return c
}

// checkLoops checks the loop of every registered lease, and of the lease
// of Cwd's worktree when it has one: the loop is alive, is a gyrum
// heartbeat run of that worktree, and heartbeat.pid names it.
func checkLoops(o Options) []Check {
	entries, bad, err := o.Registry.List()
	if err != nil {
		return []Check{{Name: "loops", Status: StatusFail, Detail: err.Error(), Fix: "make " + o.Registry.Dir() + " readable by this user"}}
	}
	var checks []Check
	for _, b := range bad {
		checks = append(checks, Check{Name: "loop", Status: StatusFail, Detail: b.Err.Error(), Fix: "run gyrum watchdog sweep (it removes corrupt entries)", Command: sweepCmd})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Dir < entries[j].Dir })
	for _, e := range entries {
		checks = append(checks, checkLoop(e))
	}
	if o.Cwd != "" {
		if d, err := gyrumdir.Find(o.Cwd); err == nil && d.HasLease() {
			// The registry may name the worktree by another path (a link).
			covered := false
			for _, e := range entries {
				covered = covered || gyrumdir.SamePath(e.Dir, d.Worktree)
			}
			if !covered {
				checks = append(checks, checkUnregistered(d, o.Prepared))
			}
		}
	}
	if len(checks) == 0 {
		checks = append(checks, Check{Name: "loops", Status: StatusOK, Detail: "no heartbeat loop registered on this host (" + o.Registry.Dir() + ")"})
	}
	return checks
}

// checkLoop checks the loop of registry entry e: it runs, it is the loop
// of e's worktree, that worktree holds a lease and heartbeat.pid names
// it; then what its last tick says (checkLoopState).
func checkLoop(e gyrumdir.Entry) Check {
	c := Check{Name: "loop " + e.Ticket}
	who := fmt.Sprintf("loop of %s in %s (pid %d)", e.Ticket, e.Dir, e.PID)
	id := e.Identity()
	if !id.Alive() {
		return loopNotRunning(c, who, e)
	}
	argv, _ := proc.Cmdline(e.PID)
	dir, ok := watchdog.LoopDir(argv)
	// A relative --dir cannot be compared from here: the entry is trusted.
	if ok && filepath.IsAbs(dir) && filepath.Clean(dir) != filepath.Clean(e.Dir) {
		ok = false
	}
	if !ok {
		c.Status = StatusFail
		c.Detail = fmt.Sprintf("%s: pid %d now runs %q, not the loop", who, e.PID, strings.Join(argv, " "))
		c.Fix = "run gyrum watchdog sweep to drop the stale entry"
		c.Command = sweepCmd
		return c
	}
	d := gyrumdir.Dir{Worktree: e.Dir, Path: filepath.Join(e.Dir, gyrumdir.DirName)}
	if !d.HasLease() {
		c.Status = StatusFail
		c.Detail = who + " is running but its worktree or lease.json is gone (an orphan)"
		c.Fix = "run gyrum watchdog sweep (it stops orphan loops)"
		c.Command = sweepCmd
		return c
	}
	pidFile, err := d.ReadPID(gyrumdir.LoopPIDFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c.Status, c.Detail = StatusFail, who+" is running but "+d.File(gyrumdir.LoopPIDFile)+" is missing"
		c.Command = restartLoop(e.Dir)
		c.Fix = "restart the loop: " + c.Command
		return c
	case err != nil:
		c.Status, c.Detail = StatusFail, who+": "+err.Error()
		c.Command = restartLoop(e.Dir)
		c.Fix = "restart the loop: " + c.Command
		return c
	case pidFile != id:
		c.Status = StatusFail
		c.Detail = fmt.Sprintf("%s is running but heartbeat.pid names %s (another loop, or a stale file)", who, pidFile)
		c.Command = "gyrum heartbeat kill --dir " + shellquote.Quote(e.Dir) + "; " + sweepCmd
		c.Fix = "stop the extra loop: " + c.Command
		return c
	}
	return checkLoopState(c, who, e.Dir, d)
}

// loopNotRunning is the check of an entry whose loop is gone: drop it,
// and restart the loop — unless its agent is gone too, when the ticket is
// to be handed back (a restarted loop would only report the exit).
func loopNotRunning(c Check, who string, e gyrumdir.Entry) Check {
	c.Status = StatusFail
	c.Detail = who + " is not running (its registry entry is stale)"
	if gone := agentGone(e.Dir); gone != "" {
		c.Detail += "; " + gone
		c.Command = sweepCmd + "; " + releaseCmd(e.Dir)
		c.Fix = "drop the entry and hand the ticket back: " + c.Command + "; to go on with the work, start a new agent session and run gyrum start-work " + shellquote.Quote(e.Ticket) + " from it"
		return c
	}
	c.Command = sweepCmd + "; " + runLoop(e.Dir)
	c.Fix = "drop the entry and restart the loop to keep the lease: " + c.Command + " (or only " + sweepCmd + " to drop it)"
	return c
}

// checkLoopState judges a live loop of worktree dir (d its .gyrum/) by
// what it recorded: the agent start-work watches, whether warp took its
// last heartbeat, and whether it can still write (a full disk).
func checkLoopState(c Check, who, dir string, d gyrumdir.Dir) Check {
	c.Status, c.Detail = StatusOK, who+" is alive and matches heartbeat.pid"
	if l, err := d.ReadLease(); err == nil && (l.WatchedHow == "caller" || l.WatchedHow == "parent") {
		// Not a failure: the lease is truthful if the process is the agent.
		c.Status = StatusWarn
		c.Detail += fmt.Sprintf("; start-work did not recognise the agent and watches %q (%s): the lease ends when that process exits", l.Watched, l.WatchedHow)
		c.Fix = "if that is not the agent, name it next time: GYRUM_AGENT_PROCESS=REGEXP or start-work --watch-pid PID (docs/agents/other.md)"
	}
	// Alive is not heartbeating: what the loop's last tick got says
	// whether warp takes its heartbeats.
	st, err := d.ReadState()
	switch {
	case err != nil:
	case st.LastOutcome == "error" && (st.LastStatus == http.StatusUnauthorized || st.LastStatus == http.StatusForbidden):
		c.Status = StatusFail
		c.Detail = fmt.Sprintf("%s is alive, but warp refuses its heartbeats (HTTP %d: %s)", who, st.LastStatus, st.LastError)
		c.Fix = "the loop runs with the WARP_TOKEN and WARP_URL start-work had (the token goes only to WARP_URL's server): give it an agent token of the server (a line of its --token-file) and the URL lease.json names, then restart the loop: gyrum heartbeat kill --dir " + shellquote.Quote(dir) + "; " + runLoop(dir)
	case st.LastOutcome == "corrupt-lease":
		c.Status = StatusWarn
		c.Detail = who + " is alive, but could not read " + d.File(gyrumdir.LeaseFile) + " at its last tick: it writes it back from memory at the next (or heartbeats from memory if it cannot)"
		c.Fix = "find what damaged lease.json; if the warning stays, check that the worktree is writable, or release the ticket: gyrum release --dir " + shellquote.Quote(dir)
	case st.LastOutcome == "error":
		c.Detail += fmt.Sprintf("; its last heartbeat failed (%d failures in all; last: %s) and it retries", st.Failures, st.LastError)
	}
	if trouble := d.WriteTrouble(time.Now()); trouble != "" {
		c.Status = StatusFail
		c.Detail = who + ": " + trouble
		c.Fix = "free space on that file system (df -h " + shellquote.Quote(dir) + "); the loop writes its state and any lease-ended notice again at its next attempt"
	}
	return c
}

// checkUnregistered checks the lease of the current worktree, whose loop
// the registry does not know. When $GYRUM_HOME has no record of the
// worktree either, the home was deleted (or this is another GYRUM_HOME):
// the hook does not credit the worktree until a loop restores the record.
func checkUnregistered(d gyrumdir.Dir, prepared gyrumdir.Prepared) Check {
	c := Check{Name: "loop (this worktree)"}
	ticket := "?"
	if l, err := d.ReadLease(); err == nil {
		ticket = l.Ticket
	}
	lost := ""
	if prepared != (gyrumdir.Prepared{}) && !prepared.Has(d.Worktree) {
		lost = fmt.Sprintf("; %s has no record of this worktree (deleted, or not the GYRUM_HOME start-work used), so the agent's hook does not credit it",
			prepared.Home())
	}
	id, err := d.ReadPID(gyrumdir.LoopPIDFile)
	if err == nil && id.Alive() {
		c.Status = StatusFail
		c.Detail = fmt.Sprintf("the loop of %s in %s (pid %d) runs but is not in the registry%s", ticket, d.Worktree, id.PID, lost)
		c.Command = restartLoop(d.Worktree)
		c.Fix = "restart it so it registers: " + c.Command
		return c
	}
	c.Status = StatusFail
	c.Detail = fmt.Sprintf("%s holds the lease of %s but no heartbeat loop runs for it%s", d.Worktree, ticket, lost)
	if gone := agentGone(d.Worktree); gone != "" {
		// The loop ended with its agent; restarting it cannot help.
		c.Detail += "; " + gone
		c.Command = releaseCmd(d.Worktree)
		c.Fix = "hand the ticket back and clear the worktree: " + c.Command + " (a lease warp already ended counts as released); to go on with the work, start a new agent session and run gyrum start-work " + shellquote.Quote(ticket) + " from it"
		return c
	}
	c.Command = runLoop(d.Worktree)
	c.Fix = "restart the loop (it restores what $GYRUM_HOME needs): " + c.Command + " (or gyrum release --dir " + shellquote.Quote(d.Worktree) + ")"
	return c
}

// agentGone says, when the agent process start-work watched for worktree
// wt (.gyrum/heartbeat.parent.pid) has exited, that it has; "" while it
// lives or when the file says nothing.
func agentGone(wt string) string {
	d := gyrumdir.Dir{Worktree: wt, Path: filepath.Join(wt, gyrumdir.DirName)}
	id, err := d.ReadPID(gyrumdir.ParentPIDFile)
	if err != nil || id.PID == 0 || id.Alive() {
		return ""
	}
	return fmt.Sprintf("the agent it watched (pid %d) has exited, and no loop can bring it back", id.PID)
}

// releaseCmd is the command that hands wt's ticket back and clears it.
func releaseCmd(wt string) string { return "gyrum release --dir " + shellquote.Quote(wt) }

// WriteText writes one line per check, each failure followed by its fix,
// and a last line with the verdict.
func WriteText(w io.Writer, rep Report) error {
	var b strings.Builder
	fails, warns := 0, 0
	for _, c := range rep.Checks {
		fmt.Fprintf(&b, "%-4s  %-12s %s\n", c.Status, c.Name, c.Detail)
		if c.Status == StatusFail || c.Status == StatusWarn {
			if c.Status == StatusFail {
				fails++
			} else {
				warns++
			}
			if c.Fix != "" {
				fmt.Fprintf(&b, "      fix: %s\n", c.Fix)
			}
		}
	}
	switch {
	case !rep.OK:
		fmt.Fprintf(&b, "doctor: %d problem(s) found\n", fails)
	case warns > 0:
		fmt.Fprintf(&b, "doctor: no problem, %d warning(s)\n", warns)
	default:
		b.WriteString("doctor: everything is in order\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes rep as indented JSON.
func WriteJSON(w io.Writer, rep Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// hooksDisabled reports whether the default agent (agent.Default, Claude
// Code) runs none of gyrum's hooks on this host, and the fix. Its
// DisableKey counts from the file of highest precedence that sets it
// (managed > project-local > project > user); managed settings with its
// ManagedOnlyKey ignore every hook but their own. A managed settings file
// that cannot be read may do either: that is said too.
func hooksDisabled(o Options) (problem, fix string) {
	a := agent.Default()
	h := a.Hooks
	if h.DisableKey == "" {
		return "", ""
	}
	managed := o.ManagedSettings
	if managed == nil {
		managed = h.Managed[runtime.GOOS]
	}
	for _, path := range managed {
		v, err := settingsFlags(path, h)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return fmt.Sprintf("managed settings %s cannot be read (%v): hooks may be disabled by your administrator", path, err),
				fmt.Sprintf("ask the administrator whether %s sets %s or %s", path, h.DisableKey, h.ManagedOnlyKey)
		case v.disableAll != nil && *v.disableAll:
			return fmt.Sprintf("%s runs no hook: managed settings %s set %q: true", a.Title, path, h.DisableKey),
				"ask the administrator to allow hooks (only they can change " + path + ")"
		case v.managedOnly:
			return fmt.Sprintf("%s runs only managed hooks: %s sets %q: true, so gyrum's hook never runs", a.Title, path, h.ManagedOnlyKey),
				fmt.Sprintf("ask the administrator to add gyrum's hook (gyrum-hook or gyrum touch-activity) to %s or to lift %s", path, h.ManagedOnlyKey)
		}
	}
	files := settingsFiles(o)
	for i := len(files) - 1; i >= 0; i-- {
		v, err := settingsFlags(files[i], h)
		if err != nil || v.disableAll == nil {
			continue // unreadable files are the hook check's to report
		}
		if *v.disableAll {
			return fmt.Sprintf("%s runs no hook: %s sets %q: true", a.Title, files[i], h.DisableKey),
				fmt.Sprintf("remove %q from %s (or set it to false)", h.DisableKey, files[i])
		}
		break
	}
	return "", ""
}

type hookFlags struct {
	disableAll  *bool
	managedOnly bool
}

// settingsFlags reads h's DisableKey and ManagedOnlyKey from the settings
// file at path.
func settingsFlags(path string, h *agent.Hooks) (hookFlags, error) {
	data, err := setup.ReadConfig(path)
	if err != nil {
		return hookFlags{}, err
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal(data, &v); err != nil {
		return hookFlags{}, fmt.Errorf("%s: %w", path, err)
	}
	var f hookFlags
	if raw, ok := v[h.DisableKey]; ok {
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return hookFlags{}, fmt.Errorf("%s: %s: %w", path, h.DisableKey, err)
		}
		f.disableAll = &b
	}
	if raw, ok := v[h.ManagedOnlyKey]; ok && h.ManagedOnlyKey != "" {
		if err := json.Unmarshal(raw, &f.managedOnly); err != nil {
			return hookFlags{}, fmt.Errorf("%s: %s: %w", path, h.ManagedOnlyKey, err)
		}
	}
	return f, nil
}

// runLoop is the command that starts dir's loop again from a shell: in
// the background and immune to the terminal's hangup (gyrum heartbeat run
// runs in the foreground and prints nothing, which pasted as it is looks
// hung and ends with the terminal). After a kill it follows a ";", not
// "&&": a trailing "&" would put the kill in the background too, and a
// second loop refuses to start anyway.
func runLoop(dir string) string {
	return "nohup gyrum heartbeat run --dir " + shellquote.Quote(dir) + " >/dev/null 2>&1 &"
}

// sweepCmd drops stale and corrupt registry entries and stops orphans.
const sweepCmd = "gyrum watchdog sweep"

// restartLoop stops dir's loop (identity checked) and starts it again.
func restartLoop(dir string) string {
	return "gyrum heartbeat kill --dir " + shellquote.Quote(dir) + "; " + runLoop(dir)
}

// checkAgentTrust runs the agents' trust checks (package trust): for every
// other agent whose hook file holds gyrum's hooks (what `gyrum setup
// --agents` installed), that the agent will run them.
func checkAgentTrust(o Options) []Check {
	var out []Check
	for _, r := range trust.Check(trust.Input{Home: o.Home, Getenv: o.Getenv, Cwd: o.Cwd, IsHookCommand: setup.IsHookCommand}) {
		c := Check{Name: r.Name, Status: StatusOK, Detail: r.Detail}
		if !r.OK {
			c.Status, c.Fix = StatusFail, r.Fix
		}
		out = append(out, c)
	}
	return out
}
