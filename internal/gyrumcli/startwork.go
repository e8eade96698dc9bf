package gyrumcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	osuser "os/user"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/agent"
	"github.com/gyrum-labs/warp/internal/agentproc"
	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/clikit/apiclient"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/handoff"
	"github.com/gyrum-labs/warp/internal/heartbeat"
	"github.com/gyrum-labs/warp/internal/proc"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/snapshot"
	"github.com/gyrum-labs/warp/internal/ticketid"
)

type startWorkOptions struct {
	next     bool
	labels   []string
	dir      string
	worktree bool
	agent    string
	host     string
	watchPID int
	schema   int
	json     bool
	resume   bool
}

// StartResult is what start-work prints with --json.
type StartResult struct {
	Ticket     string `json:"ticket"`
	Epoch      int64  `json:"epoch"`
	Dir        string `json:"dir"`
	Branch     string `json:"branch,omitempty"`
	WarpURL    string `json:"warp_url"`
	Agent      string `json:"agent"`
	Host       string `json:"host"`
	LoopPID    int    `json:"loop_pid"`
	WatchedPID int    `json:"watched_pid"`
	Watched    string `json:"watched"`     // executable name
	WatchedHow string `json:"watched_how"` // --watch-pid, CLAUDE_PID, ancestor, app-server-client, caller, parent, self
	// Handoff is what the earlier attempts left (.gyrum/handoff.json);
	// absent for a first claim.
	Handoff *handoff.Handoff `json:"handoff,omitempty"`
}

func (a *App) startWorkCommand() *cobra.Command {
	var o startWorkOptions
	cmd := &cobra.Command{
		Use:   "start-work (TICKET | --next [--label L]) [flags] [-- CMD ARGS...]",
		Short: "Claim a ticket, prepare .gyrum/ and spawn the heartbeat loop",
		Long:  startWorkLong,
		Example: `  gyrum start-work T-42
  gyrum start-work --next --label backend --worktree
  gyrum start-work T-42 --dir ../repo-T-42 --agent O --json
  gyrum start-work T-42 -- claude -p "fix T-42"`,
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			ticket, child, err := o.parseArgs(args, cmd.ArgsLenAtDash())
			if err != nil {
				return err
			}
			return a.startWork(cmd.Context(), o, ticket, child)
		}),
	}
	f := cmd.Flags()
	f.BoolVar(&o.next, "next", false, "claim the oldest open ticket (with every --label)")
	f.StringArrayVar(&o.labels, "label", nil, "with --next: a label the ticket must carry (repeatable)")
	f.StringVar(&o.dir, "dir", "", "the worktree (default: the working directory); with --worktree, the repository")
	f.BoolVar(&o.worktree, "worktree", false, "create a git worktree and branch gyrum/<ticket> for the ticket")
	f.StringVar(&o.agent, "agent", "", "agent label recorded with the lease (env GYRUM_AGENT; default PRODUCT:USER@HOST, e.g. claude-code:jane@vm)")
	f.StringVar(&o.host, "host", "", "host name recorded with the lease (env GYRUM_HOST, default the host name)")
	clikit.IntVar(f, &o.watchPID, "watch-pid", 0, "the agent process to watch (default: CLAUDE_PID, the ancestor walk, the parent)")
	clikit.IntVar(f, &o.schema, "schema-version", 2, "2: the activity-gated loop; 1: a pre-ADR v1 loop (mixed fleets, the simulator)")
	f.BoolVar(&o.json, "json", false, "print the result as JSON")
	f.BoolVar(&o.resume, "resume", false, "with --worktree: make the worktree from the last snapshot of an earlier attempt reachable here (the local ref, else fetched from its remote)")
	return cmd
}

// startWorkLong is the help of gyrum start-work.
const startWorkLong = `start-work claims TICKET (or, with --next, the oldest open ticket carrying every
--label) and prepares the worktree's .gyrum/: lease.json, the watched agent
process with its start time (heartbeat.parent.pid) and a fresh last-activity.
It then spawns 'gyrum heartbeat run' detached (new session, every stream on
/dev/null), waits until the loop has registered, and prints what it did.

The worktree is the working directory, --dir D, or with --worktree a new git
worktree of the repository holding --dir (or the working directory) at
<root>/<repo>-<ticket> on a new branch gyrum/<ticket> (an existing branch of
that name is checked out instead); root is GYRUM_WORKTREE_ROOT, else the
repository's parent directory. In a git work tree, start-work adds .gyrum/
to the repository's info/exclude (once; the file git rev-parse --git-path
names, so linked worktrees and submodules get theirs), so lease files are
never committed.

The watched process is --watch-pid, else CLAUDE_PID (else OPENCODE_PID, else
KILO_PID: the pid an agent hands its tools), else the nearest ancestor
that is a known agent (claude or claude.exe, node running @anthropic-ai/claude-code,
codex, gemini or node running @google/gemini-cli, cursor-agent, opencode, .kilo,
pi, aider, or a match of the GYRUM_AGENT_PROCESS regexp), else, for an agent gyrum does not
know, the first process above the tool call's command-string shells (sh -c,
bash -lc, ...) and launch wrappers (env, timeout, nice, ...) (watched_how
caller, with a warning), else the parent of start-work (an interactive
shell). Under
Codex's shared app-server daemon it watches the daemon's one connected client
instead, with that client's WARP_*, GYRUM_*, HEARTBEAT_* and HOME, and refuses
when there is no client, several, or a remote listener. The
watched process is recorded in $GYRUM_HOME/agents, so the hook credits this
lease for that agent's tool calls whatever its shell's cwd is.

With -- CMD ARGS... start-work runs CMD in the worktree as its child and
watches itself; SIGINT, SIGTERM and SIGHUP are forwarded to CMD. However CMD
ends, the loop is stopped and the lease released (only complete-pr completes a
ticket), and start-work exits with CMD's code (128+N when a signal N killed
it). Its summary then goes to stderr, so CMD's output stays its own. If
start-work itself is killed (SIGKILL, the OOM killer), Linux ends CMD too
(parent-death signal SIGTERM); macOS cannot, and CMD runs on without a lease.

If anything fails after the claim, start-work undoes it: the loop is reaped,
the lease released, the files and the new worktree removed.`

// parseArgs checks the arguments (dash: where -- was, -1 without) and flags
// that go together, and returns TICKET ("" with --next) and CMD ARGS (nil
// without --).
func (o *startWorkOptions) parseArgs(args []string, dash int) (ticket string, child []string, err error) {
	if dash >= 0 {
		child, args = args[dash:], args[:dash]
		if len(child) == 0 {
			return "", nil, clikit.Usagef("nothing after --: give the command to run")
		}
	}
	switch {
	case o.next && len(args) > 0:
		return "", nil, clikit.Usagef("give a TICKET or --next, not both")
	case !o.next && len(args) != 1:
		return "", nil, clikit.Usagef("give one TICKET, or --next")
	case !o.next:
		ticket = args[0]
		if err := apiclient.CheckTicketID(ticket); err != nil {
			return "", nil, err
		}
		if len(o.labels) > 0 {
			return "", nil, clikit.Usagef("--label goes with --next")
		}
	}
	if o.resume && !o.worktree {
		return "", nil, clikit.Usagef("--resume makes a new worktree from the last attempt's snapshot: give --worktree too")
	}
	if o.schema != 1 && o.schema != 2 {
		return "", nil, clikit.Usagef("--schema-version %d: want 1 or 2", o.schema)
	}
	if child != nil && o.watchPID != 0 {
		return "", nil, clikit.Usagef("--watch-pid and -- CMD exclude each other: with -- CMD gyrum watches itself")
	}
	if o.watchPID < 0 {
		return "", nil, clikit.Usagef("--watch-pid %d is not a pid", o.watchPID)
	}
	return ticket, child, nil
}

// undo collects what start-work must take back if a later step fails.
type undo []func()

func (u *undo) add(f func()) { *u = append(*u, f) }

func (u undo) run() {
	for i := len(u) - 1; i >= 0; i-- {
		u[i]()
	}
}

// startWork runs start-work's steps over one undo stack: check (before
// anything is claimed: nothing to give back), claim, prepare the worktree
// and its .gyrum/, register it for the hook, spawn the loop; then report,
// and in wrapper mode run CMD. Each step pushes the undo of what it did;
// when a later step fails (or a signal ends it, see interrupts) the stack
// runs backwards, while the start lock and the signal catch still hold.
func (a *App) startWork(ctx context.Context, o startWorkOptions, ticket string, child []string) (err error) {
	// In wrapper mode a signal must never kill gyrum: from the claim on,
	// sigs holds it, and once CMD runs runChild passes it on.
	var sigs chan os.Signal
	if child != nil {
		sigs = make(chan os.Signal, 4)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		defer signal.Stop(sigs)
	}
	in := catchInterrupts(ctx, a.Stderr)
	defer in.close()
	s := &startRun{a: a, o: o, ticket: ticket, child: child, in: in, unlock: func() {}}
	defer func() { s.unlock() }()
	defer func() {
		if err != nil && !s.kept {
			s.undo.run()
		}
	}()
	// Under a Codex app-server daemon the session (what to watch, which
	// environment) is its client's: settled before anything reads the
	// environment.
	if child == nil && o.watchPID == 0 {
		if s.watched, s.server, err = a.serverClient(); err != nil {
			return err
		}
	}
	if err := s.check(ctx); err != nil {
		return err
	}
	if err := s.claim(ctx); err != nil {
		return err
	}
	s.warnParent()
	if err := s.prepare(); err != nil {
		return err
	}
	if err := s.register(); err != nil {
		return err
	}
	if err := s.spawn(ctx); err != nil {
		return err
	}
	out := a.Stdout
	if child != nil {
		out = a.Stderr
	}
	if err := printStart(out, s.res, o.json); err != nil {
		return fmt.Errorf("print the result: %w", err)
	}
	if child == nil {
		return nil
	}
	return s.wrap(sigs)
}

// startRun is one start-work between its steps: what each step found or
// made, and the undo stack of what they did.
type startRun struct {
	a      *App
	o      startWorkOptions
	ticket string   // the TICKET asked for; "" with --next
	child  []string // -- CMD ARGS; nil without
	in     *interrupts

	base    string // the worktree, or with --worktree a directory of the repository
	repo    string // with --worktree: the top level of base's repository
	unlock  func() // gives the start lock of base back (without --worktree)
	watched Watched
	server  bool // watched is the client of an agent's shared server (serverClient)
	api     *client.Client
	t       client.Ticket // as claimed
	sent    time.Time     // when the claim was sent, on this host's clock
	d       gyrumdir.Dir
	lease   gyrumdir.Lease
	res     StartResult
	handoff *handoff.Handoff // what the earlier attempts left

	undo undo
	kept bool // the lease is in the hands of the loop (or of CMD): no undo
}

// check finds, before anything is claimed, every reason start-work would
// refuse: GYRUM_HOME, the durations, the directory (locked for this
// start-work, not tracking .gyrum/, holding no lease), CMD and the process
// to watch.
func (s *startRun) check(ctx context.Context) error {
	if _, err := s.a.registry(); err != nil {
		return err
	}
	if _, err := s.a.durations(); err != nil {
		return err
	}
	if err := s.checkDir(ctx); err != nil {
		return err
	}
	if s.child != nil {
		if err := findCommand(s.child[0]); err != nil {
			return err
		}
	}
	return s.checkWatched()
}

// checkDir settles the directory start-work works in: --dir or the
// working directory. Without --worktree it takes the start lock of it and
// refuses it if its repository tracks .gyrum/ or it holds a lease; with
// --worktree it must be in a git repository.
func (s *startRun) checkDir(ctx context.Context) (err error) {
	base := s.o.dir
	if base == "" {
		if base, err = s.a.getwd(); err != nil {
			return fmt.Errorf("working directory: %w", err)
		}
	}
	if base, err = filepath.Abs(base); err != nil {
		return err
	}
	if st, err := os.Stat(base); err != nil || !st.IsDir() {
		return clikit.Usagef("--dir %s is not a directory", base)
	}
	s.base = base
	if s.o.worktree {
		s.repo, err = worktreeRepo(ctx, base) // not a git repository: found before the claim, not after
		return err
	}
	// Held until the loop is up: a second start-work here meanwhile
	// would pass checkFree too.
	home, err := gyrumdir.Home(s.a.getenv)
	if err != nil {
		return clikit.Usagef("%v", err)
	}
	release, err := gyrumdir.LockStart(home, base)
	if errors.Is(err, gyrumdir.ErrStartLocked) {
		return fmt.Errorf("%s: another gyrum start-work is setting it up; when it is done, 'gyrum status' shows its loop", base)
	}
	if err != nil {
		return err
	}
	s.unlock = release
	// Before the claim: nothing to give back (the check after the claim
	// covers a --worktree checkout).
	if err := refuseTracked(ctx, base); err != nil {
		return err
	}
	return checkFree(base)
}

// checkWatched settles the process whose life the lease follows: gyrum
// itself in wrapper mode, else resolveWatched (warnParent warns, after the
// claim, when only the parent was found).
func (s *startRun) checkWatched() (err error) {
	if s.child != nil {
		self, err := proc.Self()
		if err != nil {
			return err
		}
		s.watched = Watched{Identity: self, Name: "gyrum", How: "self"}
		return nil
	}
	if s.server {
		return nil // settled by serverClient
	}
	if s.watched, err = s.a.resolveWatched(s.o.watchPID); err != nil {
		return err
	}
	return nil
}

// warnParent says, once the claim succeeded (a refused claim must not be
// preceded by an unrelated warning), that no agent process was found.
func (s *startRun) warnParent() {
	if s.watched.How == "caller" {
		fmt.Fprintf(s.a.Stderr, "gyrum: no agent gyrum knows above start-work: watching pid %d (%s), the first process above the tool call's shell (%d shells and wrappers passed); the lease ends when it exits. "+
			"If that is not the agent, name it with --watch-pid PID or GYRUM_AGENT_PROCESS=REGEXP\n", s.watched.PID, clikit.Clean(s.watched.Name), s.watched.Passed)
	}
	if s.watched.How == "parent" {
		fmt.Fprintf(s.a.Stderr, "gyrum: no agent process found above start-work: watching its parent, pid %d (%s); the lease ends when it exits. "+
			"Name the agent with --watch-pid PID or CLAUDE_PID, or run it under gyrum start-work -- CMD\n", s.watched.PID, clikit.Clean(s.watched.Name))
	}
}

// defaultAgent is the agent label when none is given: the agent's product
// (of the watched process, or of CMD in wrapper mode), user and host, as
// claude-code:jane@vm, so lists and errors name who holds a lease.
func (s *startRun) defaultAgent(host string) string {
	name := s.watched.Name
	if s.child != nil {
		name = filepath.Base(s.child[0])
	} else if a, ok := agent.ByPIDEnv(s.watched.How); ok {
		name = a.Name // the process the agent announced, whatever it is called
	}
	user := firstOf(s.a.getenv("USER"), s.a.getenv("LOGNAME"))
	if user == "" {
		if u, err := osuser.Current(); err == nil {
			user = u.Username
		}
	}
	if user == "" {
		user = "unknown"
	}
	return agentproc.Product(name) + ":" + user + "@" + host
}

// claim claims the ticket (or the next one) and checks the answer; its
// undo releases the lease. An answer that names no valid ticket or holds
// no lease is not undone: there is nothing to send back.
func (s *startRun) claim(ctx context.Context) error {
	host := firstOf(s.o.host, s.a.getenv("GYRUM_HOST"))
	if host == "" {
		host, _ = os.Hostname()
	}
	agent := firstOf(s.o.agent, s.a.getenv("GYRUM_AGENT"))
	if agent == "" {
		agent = s.defaultAgent(host)
	}
	api := s.a.client("")
	var t client.Ticket
	var err error
	s.sent = s.a.now()
	if s.ticket != "" {
		t, err = api.Claim(ctx, s.ticket, client.ClaimRequest{Agent: agent, Host: host})
	} else {
		t, err = api.ClaimNext(ctx, client.ClaimNextRequest{Agent: agent, Host: host, Labels: s.o.labels})
	}
	if err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	// The id becomes a directory and a branch name: a server that answers
	// with something else (another service at WARP_URL, or a hostile one)
	// must not choose a path. Such an id is not sent back to be released.
	if !ticketid.Valid(t.ID) {
		return fmt.Errorf("claim: the server answered with ticket id %q, which is not a valid ticket id: nothing was set up (is WARP_URL a warp server?)", t.ID)
	}
	if t.Lease == nil {
		return fmt.Errorf("claim %s: the server answered without a lease", t.ID)
	}
	s.api, s.t = api, t
	s.undo.add(s.releaseClaim)
	if err := s.in.err(); err != nil {
		return err
	}
	if s.ticket != "" && t.ID != s.ticket {
		return fmt.Errorf("claim %s: the server answered with ticket %s: nothing was set up", s.ticket, t.ID)
	}
	s.res = StartResult{Ticket: t.ID, Epoch: t.Lease.Epoch, WarpURL: api.BaseURL(), Agent: agent, Host: host,
		WatchedPID: s.watched.PID, Watched: s.watched.Name, WatchedHow: s.watched.How}
	h := handoff.New(t, t.Lease.Epoch)
	s.handoff = &h
	if len(h.Attempts) > 0 {
		s.res.Handoff = s.handoff
	}
	return nil
}

// releaseClaim is the undo of claim.
func (s *startRun) releaseClaim() {
	// Background: the claim must be undone even when ctx ended.
	req := client.ReleaseRequest{Epoch: s.t.Lease.Epoch, Reason: "start-work-failed"}
	if _, err := s.api.WithLeaseSecret(s.t.LeaseSecret).Release(context.Background(), s.t.ID, req); err != nil {
		fmt.Fprintf(s.a.Stderr, "gyrum: could not release %s after the failure: %s\n", s.t.ID, apiclient.Message(err))
	}
}

// prepare makes the worktree (with --worktree; its undo removes it) and
// its .gyrum/ holding only this lease (its undo clears it).
func (s *startRun) prepare() error {
	wt := s.base
	if s.o.worktree {
		plan, err := s.a.planWorktree(s.repo, s.t.ID)
		if err != nil {
			return firstErr(s.in.err(), err)
		}
		var from *handoff.Attempt
		if s.o.resume {
			if from = s.reachableSnapshot(s.in.ctx); from != nil {
				// The old attempt's worktree may still be here, on
				// gyrum/<ticket>: this one is the new attempt's.
				plan.Path += fmt.Sprintf("-%d", s.res.Epoch)
				plan.Branch += fmt.Sprintf("-%d", s.res.Epoch)
				plan.Start = from.Snapshot.Base
			}
		}
		if err := addWorktree(s.in.ctx, plan); err != nil {
			return firstErr(s.in.err(), err)
		}
		s.undo.add(func() { _ = removeWorktree(context.Background(), plan) })
		wt, s.res.Branch = plan.Path, plan.Branch
		if from != nil {
			if err := snapshot.Restore(s.in.ctx, wt, from.Snapshot.Commit); err != nil {
				return firstErr(s.in.err(), fmt.Errorf("resume from the snapshot of attempt %d: %w", from.Number, err))
			}
			s.handoff.Resumed = from.Snapshot.Commit
		}
		// Without --worktree, check looked at base before the claim.
		if err := refuseTracked(s.in.ctx, wt); err != nil {
			return firstErr(s.in.err(), err)
		}
	}
	s.res.Dir = wt
	return s.prepareDir(wt)
}

// prepareDir writes wt's .gyrum/: lease.json, the watched process and a
// fresh last-activity, after clearing whatever was there; and keeps
// .gyrum/ out of git.
func (s *startRun) prepareDir(wt string) error {
	d, err := gyrumdir.Create(wt)
	if err != nil {
		return err
	}
	s.d = d
	s.undo.add(func() { _ = d.Clear() })
	// Whatever an earlier holder left (in-flight markers, a wait, a
	// notice, counters) is not this lease's: it starts clean.
	if err := d.Clear(); err != nil {
		return fmt.Errorf("clean %s: %w", d.Path, err)
	}
	// Agents must never commit lease files: keep .gyrum/ out of git.
	if p, _, err := excludeGyrum(s.in.ctx, wt); err != nil {
		fmt.Fprintf(s.a.Stderr, "gyrum: could not add %s to %s: %s (keep it out of commits by hand)\n", excludeLine, p, err)
	}
	s.lease = gyrumdir.Lease{Ticket: s.t.ID, Epoch: s.t.Lease.Epoch, WarpURL: s.api.BaseURL(), Agent: s.res.Agent, Host: s.res.Host,
		ClaimedAt: s.t.Lease.ClaimedAt, LeaseSecret: s.t.LeaseSecret, Watched: s.watched.Name, WatchedHow: s.watched.How,
		HeldUntil: heldUntil(s.sent, *s.t.Lease)}
	s.lease.SnapshotPush = s.a.snapshotPushOn()
	if err := d.WriteLease(s.lease); err != nil {
		return err
	}
	if s.handoff != nil {
		if err := writeHandoff(d, *s.handoff); err != nil {
			return err
		}
	}
	if err := d.WritePID(gyrumdir.ParentPIDFile, s.watched.Identity); err != nil {
		return err
	}
	if !s.watched.Server.IsZero() {
		if err := d.WritePID(gyrumdir.ServerPIDFile, s.watched.Server); err != nil {
			return err
		}
	}
	return d.WriteActivity(gyrumdir.ActivityRecord{Source: gyrumdir.SourceStartWork, At: s.a.now()})
}

// register tells the hook about the worktree: it writes only into
// worktrees start-work prepared, and credits this one for the watched
// agent's tool calls wherever its shell's cwd is (in wrapper mode, once
// the agent runs: runChild). Its undo forgets the worktree. A failure
// here only costs the hook a shortcut: it warns.
func (s *startRun) register() error {
	s.undo.add(func() { s.a.forgetWorktree(s.d) })
	if home, err := gyrumdir.Home(s.a.getenv); err == nil {
		if err := gyrumdir.NewPrepared(home).Add(s.d.Worktree); err != nil {
			fmt.Fprintf(s.a.Stderr, "gyrum: the hook will not write into %s: %v\n", s.d.Worktree, err)
		}
	}
	if s.child == nil {
		s.a.indexAgent(s.watched.Identity, s.d)
	}
	return s.in.err()
}

// spawn starts the heartbeat loop (its undo stops it) and gives the start
// lock back: lease.json and the loop are there, checkFree now refuses.
func (s *startRun) spawn(ctx context.Context) error {
	loop, err := s.a.spawnLoop(ctx, s.d, s.o.schema)
	if err != nil {
		return err
	}
	s.res.LoopPID = loop.PID
	s.undo.add(func() { _, _ = s.a.stopLoop(context.Background(), s.d) })
	s.unlock()
	return s.in.err()
}

// wrap runs CMD with the lease set up: from here on a signal is CMD's
// (sigs; runChild passes it on). Once CMD has started the lease is kept
// from the undo: endAfterChild ends it, and start-work exits with CMD's
// code.
func (s *startRun) wrap(sigs chan os.Signal) error {
	s.in.handOver()
	if err := s.in.err(); err != nil {
		return err
	}
	select {
	case sig := <-sigs:
		return fmt.Errorf("interrupted by %v before starting %s", sig, s.child[0])
	default:
	}
	code, err := s.a.runChild(s.child, s.d, sigs)
	if err != nil {
		return err // never started: undo everything
	}
	s.kept = true
	s.a.endAfterChild(s.d, s.lease)
	return clikit.Exit(code)
}

// interrupts is the context of start-work's steps after the claim. Until
// CMD runs, a signal (Ctrl-C while git checks out a large worktree, or
// while a repository's post-checkout hook hangs) ends it, and start-work
// undoes what it did — the claim, the worktree, the files — instead of
// dying with a claim nobody holds and a lease.json that makes every later
// start-work here refuse, or waiting on git for ever. The claim's own
// request is never cut short: its answer is what the undo needs.
type interrupts struct {
	ctx    context.Context // the steps' context
	caught chan os.Signal
	stderr io.Writer
	close  func() // stops catching and ends ctx
}

func catchInterrupts(parent context.Context, stderr io.Writer) *interrupts {
	caught := make(chan os.Signal, 1)
	signal.Notify(caught, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	ctx, cancel := context.WithCancelCause(parent)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-caught:
			cancel(interrupted{s.(syscall.Signal)})
		case <-done:
		}
	}()
	return &interrupts{ctx: ctx, caught: caught, stderr: stderr, close: func() {
		close(done)
		cancel(nil)
		signal.Stop(caught)
	}}
}

// handOver stops catching signals: they are CMD's from now on.
func (in *interrupts) handOver() { signal.Stop(in.caught) }

// err is the error of a signal caught by now, nil when none was.
func (in *interrupts) err() error {
	var sig interrupted
	if errors.As(context.Cause(in.ctx), &sig) {
		fmt.Fprintf(in.stderr, "gyrum: %v: undoing start-work\n", sig)
		return clikit.Exit(128 + int(sig.sig))
	}
	return nil
}

// interrupted is the cause of start-work's steps ending on a signal.
type interrupted struct{ sig syscall.Signal }

func (i interrupted) Error() string { return "interrupted by " + i.sig.String() }

// firstErr returns the first of errs that is not nil.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func firstOf(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// refuseTracked refuses a worktree whose repository tracks .gyrum/
// (trackedGyrum).
func refuseTracked(ctx context.Context, wt string) error {
	files, err := trackedGyrum(ctx, wt)
	if err != nil {
		return err
	}
	if len(files) > 0 {
		return clikit.Failf("the repository tracks %s (%s): gyrum keeps the lease and its secret there, which must never be committed; "+
			"remove it from the repository (git rm -r --cached %s, then commit) and run start-work again",
			clikit.Clean(filepath.Join(wt, gyrumdir.DirName)), clikit.Clean(strings.Join(files, ", ")), gyrumdir.DirName)
	}
	return nil
}

// checkFree refuses a worktree that already holds a lease: its state is
// somebody's, and start-work must not overwrite it.
func checkFree(wt string) error {
	d, err := gyrumdir.At(wt)
	if err != nil {
		return err
	}
	if !d.HasLease() {
		return nil
	}
	l, err := d.ReadLease()
	if err != nil {
		return clikit.Failf("%s already has a lease.json that cannot be read (%v): inspect it, then 'gyrum release --dir %s'", wt, err, shellquote.Quote(wt))
	}
	state := "its loop is not running"
	if id, err := d.ReadPID(gyrumdir.LoopPIDFile); err == nil && id.Alive() {
		state = fmt.Sprintf("its loop pid %d is running", id.PID)
	}
	return clikit.Failf("%s already holds ticket %s (epoch %d) and %s: finish it with 'gyrum complete-pr' or 'gyrum release --dir %s' first",
		wt, l.Ticket, l.Epoch, state, shellquote.Quote(wt))
}

func printStart(w io.Writer, r StartResult, asJSON bool) error {
	if asJSON {
		return clikit.PrintJSON(w, r)
	}
	branch := ""
	if r.Branch != "" {
		branch = " (branch " + r.Branch + ")"
	}
	_, err := fmt.Fprintf(w, "claimed %s epoch %d\ndir     %s%s\nloop    pid %d, watching pid %d (%s, %s)\n",
		r.Ticket, r.Epoch, r.Dir, branch, r.LoopPID, r.WatchedPID, r.Watched, r.WatchedHow)
	if err != nil || r.Handoff == nil {
		return err
	}
	h := r.Handoff
	fmt.Fprintf(w, "earlier attempts (%d, newest first; all of it in .gyrum/%s):\n", len(h.Attempts), handoff.File)
	for _, line := range handoff.Lines(h.Attempts, maxHandoffLines) {
		fmt.Fprintln(w, "  "+clikit.Clean(line))
	}
	if h.Resumed != "" {
		_, err = fmt.Fprintf(w, "resumed from snapshot %s: its changes are uncommitted in %s\n", h.Resumed, r.Dir)
	} else {
		_, err = fmt.Fprintln(w, "nothing of them was applied here (start-work --worktree --resume starts from the last snapshot)")
	}
	return err
}

// maxHandoffLines bounds the attempts start-work prints (handoff.json
// holds them all).
const maxHandoffLines = 3

// snapshotPush reads GYRUM_SNAPSHOT_PUSH: 1, true or yes push snapshots
// to the worktree's remote.
func snapshotPush(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes":
		return true
	}
	return false
}

// writeHandoff writes .gyrum/handoff.json.
func writeHandoff(d gyrumdir.Dir, h handoff.Handoff) error {
	data, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return fmt.Errorf("encode handoff: %w", err)
	}
	return gyrumdir.WriteFileAtomic(d.File(gyrumdir.HandoffFile), append(data, '\n'))
}

// reachableSnapshot returns the newest earlier attempt whose saved
// snapshot this host can reach — the commit in the repository (the same
// host: worktrees share it), else fetched from the snapshot's remote —
// or nil, saying why on stderr: then nothing of the old attempts is
// applied.
func (s *startRun) reachableSnapshot(ctx context.Context) *handoff.Attempt {
	for i := range s.handoff.Attempts {
		a := &s.handoff.Attempts[i]
		sn := a.Snapshot
		if sn == nil || sn.State != client.SnapshotSaved || sn.Commit == "" {
			continue
		}
		if snapshot.Has(ctx, s.repo, sn.Commit) {
			return a
		}
		if sn.Remote != "" {
			fctx, cancel := context.WithTimeout(ctx, heartbeat.SnapshotTimeout)
			err := snapshot.Fetch(fctx, s.repo, sn.Remote, sn.Ref)
			cancel()
			if err == nil && snapshot.Has(ctx, s.repo, sn.Commit) {
				return a
			}
			fmt.Fprintf(s.a.Stderr, "gyrum: the snapshot of attempt %d (%s) could not be fetched from %s: %v\n", a.Number, sn.Commit, clikit.Clean(sn.Remote), err)
			continue
		}
		fmt.Fprintf(s.a.Stderr, "gyrum: the snapshot of attempt %d (%s) is on host %s and was not pushed (gyrum setup --snapshot-push there pushes them)\n", a.Number, sn.Commit, clikit.Clean(sn.Host))
	}
	fmt.Fprintln(s.a.Stderr, "gyrum: --resume: no snapshot of an earlier attempt is reachable here: the worktree starts from HEAD")
	return nil
}

// findCommand refuses, before anything is claimed, a CMD that cannot be
// found: a bare name not on $PATH, or a path that is not an executable
// file. A relative path with a slash is looked up in the worktree when CMD
// starts (which may not exist yet), so it is not checked here.
func findCommand(name string) error {
	notFound := func(err error) error {
		return clikit.WithExitCode(127, fmt.Errorf("start %s: %w: nothing was claimed", name, err))
	}
	switch {
	case !strings.ContainsRune(name, '/'):
		if _, err := exec.LookPath(name); err != nil {
			return notFound(err)
		}
	case filepath.IsAbs(name):
		st, err := os.Stat(name)
		if err != nil {
			return notFound(err)
		}
		if st.IsDir() || st.Mode()&0o111 == 0 {
			return clikit.WithExitCode(126, fmt.Errorf("start %s: not an executable file: nothing was claimed", name))
		}
	}
	return nil
}

// runChild runs CMD in dir with gyrum's streams, forwarding signals, and
// returns its exit code (128+N when signal N killed it). The error is for a
// command that could not be started.
func (a *App) runChild(args []string, d gyrumdir.Dir, sigs chan os.Signal) (int, error) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = d.Worktree
	cmd.Env = a.childEnv()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = a.stdin(), a.Stdout, a.Stderr
	// CMD must not outlive gyrum, however gyrum dies (Linux: a parent-death
	// signal; see wrap_*.go). Its thread must stay alive while CMD runs.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tieToParent(cmd)
	if err := cmd.Start(); err != nil {
		code := 126 // found but not runnable, as shells say
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			code = 127
		}
		return 0, clikit.WithExitCode(code, fmt.Errorf("start %s: %w", args[0], err))
	}
	if id, err := proc.Lookup(cmd.Process.Pid); err == nil {
		a.indexAgent(id, d)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			_ = cmd.Process.Signal(s)
		case err := <-done:
			return childCode(cmd, err), nil
		}
	}
}

func childCode(cmd *exec.Cmd, err error) int {
	if cmd.ProcessState == nil {
		return ExitError
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return ExitError
	}
	return cmd.ProcessState.ExitCode()
}

// endAfterChild stops the loop and releases the lease once CMD ended,
// unless CMD finished the lease itself (complete-pr, release).
func (a *App) endAfterChild(d gyrumdir.Dir, lease gyrumdir.Lease) {
	ctx := context.Background()
	if st, err := a.stopLoop(ctx, d); err != nil {
		fmt.Fprintf(a.Stderr, "gyrum: %v\n", err)
	} else if st.Result == "killed" {
		fmt.Fprintf(a.Stderr, "gyrum: %s\n", st)
	}
	cur, err := d.ReadLease()
	if errors.Is(err, fs.ErrNotExist) || (err == nil && (cur.Ticket != lease.Ticket || cur.Epoch != lease.Epoch)) {
		return // ended by CMD
	}
	api := a.client(lease.WarpURL).WithLeaseSecret(lease.LeaseSecret)
	a.sendNote(ctx, api, d, lease)
	_, rerr := api.Release(ctx, lease.Ticket, client.ReleaseRequest{Epoch: lease.Epoch, Reason: "command-exited"})
	if rerr != nil && !endedAlready(rerr) {
		fmt.Fprintf(a.Stderr, "gyrum: release %s: %s; lease.json kept, retry with 'gyrum release --dir %s'\n", lease.Ticket, apiclient.Message(rerr), shellquote.Quote(d.Worktree))
		return
	}
	// What CMD left in the worktree is the attempt's snapshot, as after
	// gyrum release.
	_, _ = heartbeat.SaveSnapshot(ctx, api, d.Worktree, lease, lease.SnapshotPush, nil)
	if err := d.Clear(); err != nil {
		fmt.Fprintf(a.Stderr, "gyrum: clean %s: %v\n", d.Path, err)
	}
	a.forgetWorktree(d)
	fmt.Fprintf(a.Stderr, "gyrum: released %s (epoch %d)\n", lease.Ticket, lease.Epoch)
}

// indexAgent records that agent holds the lease of d, for the hook. A
// failure only costs the hook its shortcut (the cwd walk remains): warn.
func (a *App) indexAgent(agent proc.Identity, d gyrumdir.Dir) {
	x, err := a.agents()
	if err == nil {
		err = x.Add(agent, d.Worktree)
	}
	if err != nil {
		fmt.Fprintf(a.Stderr, "gyrum: the hook will find this lease only from the worktree's cwd: %v\n", err)
	}
}

// forgetWorktree removes d from the agent index and the prepared
// worktrees once its lease is over: the hook no longer writes there.
func (a *App) forgetWorktree(d gyrumdir.Dir) {
	if home, err := gyrumdir.Home(a.getenv); err == nil {
		_ = gyrumdir.NewAgentIndex(home).RemoveWorktree(d.Worktree)
		_ = gyrumdir.NewPrepared(home).Remove(d.Worktree)
	}
}

// endedAlready reports an answer that means the lease is over anyway: 410
// (ended), 409 (someone else's now), 404 (unknown).
func endedAlready(err error) bool {
	return errors.Is(err, client.ErrLeaseEnded) || errors.Is(err, client.ErrStaleEpoch) ||
		errors.Is(err, client.ErrConflict) || errors.Is(err, client.ErrNotFound) || errors.Is(err, client.ErrNotHolder)
}

// heldUntil is the deadline of lease l, claimed by a request sent at sent,
// on this host's clock: the lease's length by the server's clock (its
// expires_at less its claimed_at) from when the claim was sent, so a
// clock apart from the server's does not move it and the answer's delay
// only brings it earlier. Zero when the answer does not say.
func heldUntil(sent time.Time, l client.Lease) time.Time {
	if l.ExpiresAt.IsZero() || l.ClaimedAt.IsZero() || !l.ExpiresAt.After(l.ClaimedAt) {
		return time.Time{}
	}
	return sent.Add(l.ExpiresAt.Sub(l.ClaimedAt))
}
