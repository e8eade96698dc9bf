package e2etest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/progress"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// Progress is issue 44 under a real agent CLI: activity is not progress.
// A true loop is caught and the model told once; work that looks alike
// but progresses (polling whose output changes, reads of different files,
// edit-then-test cycles, exploration) is never looping nor spinning;
// activity without progress past the deadline is spinning, and told; a
// long build is never hung; a hung call (the CLI frozen, the call's
// process gone) goes stale, then stalled. Each suite describes its agent
// once (how to start it, its tools' shapes, where it shows the model a
// hook's words) and runs the scenarios from it, one method each.
type Progress struct {
	// Agent is the CLI as the harness runs it; a test skips (or, under
	// CI, fails) without it.
	Agent *agenttest.Agent
	// NewModel is the fake model server of the CLI's API shape
	// (agenttest.NewAnthropic, ...).
	NewModel func(testing.TB, ...agenttest.Turn) *agenttest.FakeModel
	// Start runs the CLI in project against model with gyrum wired in as
	// a user would (its setup's hooks), o's Dir set to project.
	Start func(t *testing.T, model *agenttest.FakeModel, project string, o agenttest.Options) *agenttest.Session
	// Claim is the call that runs `gyrum start-work ARGS`; nil: a Shell
	// call of it.
	Claim func(args string) agenttest.Call
	// Shell is a call of the CLI's shell tool running command; ShellTool
	// is that tool's name in gyrum's labels ("Bash", "run_shell_command").
	Shell     func(command string) agenttest.Call
	ShellTool string
	// LongShell is Shell for a call that runs for seconds (a build, a
	// call left hung); nil: Shell.
	LongShell func(command string) agenttest.Call
	// Read and Write are calls reading and writing the file at an
	// absolute path, as the CLI does (its file tools, or its shell).
	Read  func(path string) agenttest.Call
	Write func(path, content string) agenttest.Call
	// FilesInProject: the files the calls read and write are in the
	// project (the CLI's file tools refuse paths outside it), not in a
	// directory of their own.
	FilesInProject bool
	// Marker is how the hook names a call's in-flight marker under this
	// CLI.
	Marker MarkerNaming
	// Loop is what the loop scenario runs and how the model is told.
	Loop LoopTold
	// ToldIn returns where the CLI shows the model the words a hook gave
	// at the end of the call of tr (the texts after its result, or the
	// result itself). nil when the CLI shows them apart from the call
	// (Codex: a developer message): the loop scenario then checks only
	// that the model saw them; SpinningCaughtAndTold needs it.
	ToldIn func(tr agenttest.ToolResult) string
	// HungCallRule: the loop reads the CLI's transcript, so with the
	// hung-call rule scaled to 0.5 s it decides a call whose process is
	// gone (Claude Code). Without it gyrum knows nothing of the call's
	// state and the process rule decides at once.
	HungCallRule bool
}

// LoopTold is how the loop scenario runs under a CLI: the same failing
// shell call Fails times, the model told once, when it ran At times.
type LoopTold struct {
	Fails int
	At    int
	// Suffix, when set, is what the notice says after the count (the
	// error: ": exit 1").
	Suffix string
	// HTMLEscaped: the CLI shows a hook's words HTML-escaped (">" as
	// "&gt;").
	HTMLEscaped bool
	// Silent: the failing call prints nothing (`exit 1`), for a CLI whose
	// captured output sometimes comes back empty (ReliableOutput false in
	// its matrix): one empty result among the failures would break the
	// repetition.
	Silent bool
}

// failingCall is the loop scenario's command under the CLI.
func (l LoopTold) failingCall() string {
	if l.Silent {
		return "exit 1"
	}
	return failing
}

// failing is the loop scenario's call: the same failure each time.
const failing = "echo 'TypeError: x is not a function' >&2; exit 1"

// The words the model is told with: progress.Words and heartbeat's nudge.
const (
	toldLooping = "gyrum: you are looping"
	toldNoProg  = "gyrum: no progress"
)

// loopNotice matches the notice the model is shown when told it loops
// on the failing call.
func (p *Progress) loopNotice() *regexp.Regexp {
	cmd := regexp.QuoteMeta(p.Loop.failingCall())
	if p.Loop.HTMLEscaped {
		cmd = strings.ReplaceAll(cmd, ">", "(>|&gt;)")
	}
	return regexp.MustCompile(regexp.QuoteMeta(toldLooping+" on `"+p.ShellTool+": ") + cmd +
		regexp.QuoteMeta("` ×"+strconv.Itoa(p.Loop.At)+p.Loop.Suffix))
}

func (p *Progress) claim(args string) agenttest.Call {
	if p.Claim != nil {
		return p.Claim(args)
	}
	return p.Shell(shellquote.Quote(gyrumBin) + " start-work " + args)
}

func (p *Progress) long(command string) agenttest.Call {
	if p.LongShell != nil {
		return p.LongShell(command)
	}
	return p.Shell(command)
}

// filesDir is where a scenario's files go: the project, or a directory
// of their own.
func (p *Progress) filesDir(t *testing.T, project string) string {
	if p.FilesInProject {
		return project
	}
	return t.TempDir()
}

// inFlight reports whether the marker of call is in d: the marker named
// by its id, or any marker where the CLI gives the hook no id.
func (p *Progress) inFlight(d gyrumdir.Dir, call agenttest.Call) bool {
	if p.Marker == MarkerCallID {
		return Exists(filepath.Join(d.Path, gyrumdir.InFlightDir, gyrumdir.MarkerName(call.ID)))
	}
	ms, err := d.InFlight()
	return err == nil && len(ms) > 0
}

// run is one session of a scenario against ws, in project: the claim of
// ticket, then work, then a call held until look has looked (the lease's
// verdicts sampled all along), then after. It returns the model, the
// verdicts seen while the lease was held and the held call.
func (p *Progress) run(t *testing.T, ws *warptest.Server, ticket, project string, work, after []agenttest.Call, look func(d gyrumdir.Dir, w *Watcher)) (*agenttest.FakeModel, []warp.Verdict, agenttest.Call) {
	t.Helper()
	ws.Create(ticket)
	d, _ := gyrumdir.At(project)
	LogLoopOnFailure(t, d)
	tmp := t.TempDir()
	started, release := filepath.Join(tmp, "started"), filepath.Join(tmp, "release")
	held := p.Shell("touch " + shellquote.Quote(started) + "; while [ ! -e " + shellquote.Quote(release) + " ]; do sleep 0.05; done; echo held-done")
	turns := []agenttest.Turn{agenttest.Calls(p.claim(ticket + " --json"))}
	for _, c := range slices.Concat(work, []agenttest.Call{held}, after) {
		turns = append(turns, agenttest.Calls(c))
	}
	model := p.NewModel(t, append(turns, agenttest.Text("Done."))...)
	w := WatchTicket(t, ws, ticket)
	s := p.Start(t, model, project, agenttest.Options{Env: AgentEnv(t, ws.URL(), Interval, 30, 60)})
	Poll(t, "the held call to start", func() bool { return Exists(started) })
	look(d, w)
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s.WaitOK(SessionTimeout)
	w.Stop()
	return model, w.Verdicts(), held
}

func noLook(gyrumdir.Dir, *Watcher) {}

// LoopingCaughtAndTold: the same failing call Loop.Fails times. The
// verdict turns looping (the loop reports the repetition at its next
// tick) and the model is told once, at the Loop.At-th, in the words a
// hook gave at that call's end; the last request shows the notice once.
func (p *Progress) LoopingCaughtAndTold(t *testing.T) {
	p.Agent.Require(t)
	var fails []agenttest.Call
	for range p.Loop.Fails {
		fails = append(fails, p.Shell(p.Loop.failingCall()))
	}
	model, verdicts, _ := p.run(t, warptest.Start(t), "T-LOOP", NewProject(t), fails, nil, func(_ gyrumdir.Dir, w *Watcher) {
		Poll(t, "the verdict looping", func() bool { return slices.Contains(w.Verdicts(), warp.VerdictLooping) })
	})
	if !slices.Contains(verdicts, warp.VerdictLooping) {
		t.Fatalf("verdicts %v: never looping", verdicts)
	}
	told := p.loopNotice()
	if p.ToldIn != nil {
		for i, f := range fails {
			tr, _ := model.ToolResult(f.ID)
			in := p.ToldIn(tr)
			if got := told.MatchString(in); got != (i == p.Loop.At-1) {
				t.Errorf("after failure %d: told %v (%q), want %v", i+1, got, in, i == p.Loop.At-1)
			}
		}
	} else if !slices.ContainsFunc(model.MainRequests(), func(r agenttest.Request) bool { return slices.ContainsFunc(r.Texts(), told.MatchString) }) {
		r, _ := model.FirstWithText(toldLooping)
		for _, it := range r.Messages {
			if strings.Contains(it.Text(), "looping") {
				t.Logf("shown: %s", it.Text())
			}
		}
		t.Fatalf("the model was never shown %q", told)
	}
	main := model.MainRequests()
	n := 0
	for _, x := range main[len(main)-1].Texts() {
		n += strings.Count(x, toldLooping)
	}
	if n != 1 {
		t.Errorf("the last request shows the loop notice %d times, want once", n)
	}
}

// PollingIsNotLooping: polling, the same command 4 times (gh pr
// checks-style; the same call with the same result 4 times is a loop)
// whose output changes each time, is never looping, and the model never
// told: the call is the same, its result is not.
func (p *Progress) PollingIsNotLooping(t *testing.T) { p.notLooping(t, "T-POLL", true, false) }

// ProgressIsNotLooping: work that repeats a tool but progresses is never
// looping and the model is never told: reads of 6 different files (the
// same content each), then 3 edit-then-test cycles, a different edit each
// time and the same test failing alike.
func (p *Progress) ProgressIsNotLooping(t *testing.T) { p.notLooping(t, "T-PROG", false, true) }

// PollingAndProgressAreNotLooping is PollingIsNotLooping and
// ProgressIsNotLooping in one session, the polling first.
func (p *Progress) PollingAndProgressAreNotLooping(t *testing.T) {
	p.notLooping(t, "T-PROG", true, true)
}

func (p *Progress) notLooping(t *testing.T, ticket string, polling, edits bool) {
	p.Agent.Require(t)
	project := NewProject(t)
	var work, tests []agenttest.Call
	var code string
	var polls []agenttest.Call
	if polling {
		// The same command each time, as `gh pr checks` is polled; its
		// output changes (a counter in a file outside the project).
		// (No command substitution: Gemini CLI refuses it.)
		count := shellquote.Quote(filepath.Join(t.TempDir(), "checks-done"))
		poll := "echo check >> " + count + " && wc -l " + count
		// As many polls as make a loop when the results are alike
		// (progress.DefaultLimits.Same): Gemini CLI itself stops a
		// session at its fifth identical call.
		for range progress.DefaultLimits.Same {
			c := p.Shell(poll)
			polls = append(polls, c)
			work = append(work, c)
		}
	}
	if edits {
		dir := p.filesDir(t, project)
		for i := range 6 {
			path := filepath.Join(dir, fmt.Sprintf("f%d.txt", i))
			agenttest.WriteFile(t, path, []byte("same content\n"), 0o644)
			work = append(work, p.Read(path))
		}
		code = filepath.Join(dir, "code.txt")
		test := "grep -q fixed " + shellquote.Quote(code) + " || { echo 'FAIL: not fixed' >&2; exit 1; }"
		for i := range 3 {
			tc := p.Shell(test)
			tests = append(tests, tc)
			work = append(work, p.Write(code, fmt.Sprintf("attempt %d\n", i)), tc)
		}
	}
	model, verdicts, _ := p.run(t, warptest.Start(t), ticket, project, work, nil, noLook)
	for i, c := range polls {
		if tr, _ := model.ToolResult(c.ID); !strings.Contains(tr.Content, fmt.Sprintf("%d /", i+1)) {
			t.Fatalf("poll %d's result %q: want its own count (the premise: the output changes)", i+1, tr.Content)
		}
	}
	for _, c := range tests {
		if tr, _ := model.ToolResult(c.ID); !strings.Contains(tr.Content, "FAIL: not fixed") {
			t.Fatalf("the test's result %q: it did not fail (the premise)", tr.Content)
		}
	}
	if edits {
		if data, err := os.ReadFile(code); err != nil || string(data) != "attempt 2\n" {
			t.Fatalf("code.txt %q (%v): the edits did not land (the premise)", data, err)
		}
	}
	if slices.Contains(verdicts, warp.VerdictLooping) {
		t.Errorf("verdicts %v: looping", verdicts)
	}
	if model.SawText(toldLooping) {
		t.Error("the model was told it loops")
	}
}

// sources writes n different Go files into dir and returns calls reading
// them.
func (p *Progress) sources(t *testing.T, dir string, n int) []agenttest.Call {
	var reads []agenttest.Call
	for i := range n {
		path := filepath.Join(dir, fmt.Sprintf("src%02d.go", i))
		agenttest.WriteFile(t, path, fmt.Appendf(nil, "package p\n\nconst X%d = %d\n", i, i), 0o644)
		reads = append(reads, p.Read(path))
	}
	return reads
}

// spinAfter starts a warp whose progress deadline is spin.
func spinAfter(t *testing.T, spin time.Duration) *warptest.Server {
	pol := warp.DefaultPolicy()
	pol.SpinAfter = spin
	return warptest.StartWithPolicy(t, pol)
}

// ExplorationIsNotSpinning: exploration (40 reads of different files, no
// edit) for less than the progress deadline is never spinning (nor
// looping), and the model is never told.
func (p *Progress) ExplorationIsNotSpinning(t *testing.T) {
	p.Agent.Require(t)
	project := NewProject(t)
	reads := p.sources(t, p.filesDir(t, project), 40)
	model, verdicts, _ := p.run(t, spinAfter(t, 10*time.Minute), "T-EXPLORE", project, reads, nil, noLook)
	if res, _ := model.ToolResult(reads[39].ID); !strings.Contains(res.Content, "X39") {
		t.Fatalf("the last read's result %q (the premise: the CLI read every file)", res.Content)
	}
	if len(verdicts) == 0 {
		t.Fatal("no verdict seen while the lease was held (the premise)")
	}
	if slices.Contains(verdicts, warp.VerdictSpinning) || slices.Contains(verdicts, warp.VerdictLooping) {
		t.Errorf("verdicts %v during exploration", verdicts)
	}
	if model.SawText(toldNoProg) || model.SawText(toldLooping) {
		t.Error("the model was told it makes no progress")
	}
}

// SpinningCaughtAndTold: active without progress past the deadline (2 s;
// reads of different files, then a long call, with nothing new in the
// worktree): spinning, and the model told once, with what to do, on the
// next call's end after warp said so (the held call's), not again after
// the call that follows. Where the CLI shows a hook's words apart from
// the call (ToldIn nil: Codex), the model is shown them, and the last
// request holds them once.
func (p *Progress) SpinningCaughtAndTold(t *testing.T) {
	p.Agent.Require(t)
	project := NewProject(t)
	reads := p.sources(t, p.filesDir(t, project), 3)
	next := p.Shell("echo next")
	model, verdicts, held := p.run(t, spinAfter(t, 2*time.Second), "T-SPIN", project, reads, []agenttest.Call{next}, func(d gyrumdir.Dir, w *Watcher) {
		Poll(t, "the verdict spinning", func() bool { return slices.Contains(w.Verdicts(), warp.VerdictSpinning) })
		// The loop's nudge, left after the answer that said spinning.
		Poll(t, "the loop's nudge", func() bool { return Exists(d.File(gyrumdir.NudgeFile)) })
	})
	if !slices.Contains(verdicts, warp.VerdictSpinning) {
		t.Fatalf("verdicts %v: never spinning", verdicts)
	}
	const told = toldNoProg + " on ticket T-SPIN"
	if p.ToldIn == nil {
		main := model.MainRequests()
		n := 0
		for _, x := range main[len(main)-1].Texts() {
			if strings.Contains(x, told) && !strings.Contains(x, "gyrum release") {
				t.Errorf("the notice %q does not say what to do", x)
			}
			n += strings.Count(x, told)
		}
		if n != 1 {
			t.Errorf("the last request shows the notice %q %d times, want once", told, n)
		}
		return
	}
	tr, _ := model.ToolResult(held.ID)
	if in := p.ToldIn(tr); !strings.Contains(in, told) || !strings.Contains(in, "gyrum release") {
		t.Errorf("after the held call's result %q, want %q and what to do", in, told)
	}
	if tr, _ := model.ToolResult(next.ID); strings.Contains(p.ToldIn(tr), told) {
		t.Error("told again after the next call")
	}
}

// LongBuildIsNeverHung: a long build (a foreground call whose shell runs
// for 4 s, using CPU and writing output) is never hung: its process backs
// it, so with the hung-call rule scaled to 0.5 s (staleness 1 s) every
// heartbeat of the session is fresh.
func (p *Progress) LongBuildIsNeverHung(t *testing.T) {
	p.Agent.Require(t)
	ws := warptest.Start(t)
	ws.Create("T-BUILD")
	project := NewProject(t)
	d, _ := gyrumdir.At(project)
	LogLoopOnFailure(t, d)
	call := p.long("for i in 1 2 3 4 5 6 7 8; do echo step $i; timeout 0.5 sh -c 'while :; do :; done'; done; echo built")
	model := p.NewModel(t, agenttest.Calls(p.claim("T-BUILD --json")), agenttest.Calls(call), agenttest.Text("Done."))
	env := AgentEnv(t, ws.URL(), Interval, 1, 60)
	env["HEARTBEAT_HUNG_CALL_SECS"] = "0.5"
	s := p.Start(t, model, project, agenttest.Options{Env: env})
	Poll(t, "the call's marker", func() bool { return p.inFlight(d, call) })
	Poll(t, "the call's Post event", func() bool { return !p.inFlight(d, call) })
	s.WaitOK(SessionTimeout)
	if tr, _ := model.ToolResult(call.ID); !strings.Contains(tr.Content, "built") {
		t.Fatalf("the build's output %q: it did not run to its end (the premise)", tr.Content)
	}
	during := 0
	for _, b := range BeatsOf(ws, "T-BUILD") {
		if b.Body.InFlight != "" {
			during++
		}
		if b.Body.Stale {
			t.Errorf("a stale report in the session: %+v", b.Body)
		}
	}
	if during < 3 {
		t.Fatalf("%d heartbeats while a call was in flight, want several (the premise)", during)
	}
}

// HungCallGoesStale: a hung shell call. The CLI is frozen (SIGSTOP) with
// a call unfinished and the call's process is gone (SIGKILL), so nothing
// backs the call's marker, which stays. Once the hung-call rule (scaled
// to 0.5 s) has passed, or at once where the process rule decides, the
// call counts only its start: the reports turn stale (staleness 1 s) and
// the verdict stalled (warp's stall threshold 1 s), well before the
// in-flight cap (600 s) the call would otherwise count up to.
func (p *Progress) HungCallGoesStale(t *testing.T) {
	p.Agent.Require(t)
	ws := warptest.StartWithPolicy(t, ScaledPolicy(60*time.Second, time.Second, 30*time.Second, time.Second))
	ws.Create("T-HUNG")
	project := NewProject(t)
	d, _ := gyrumdir.At(project)
	LogLoopOnFailure(t, d)
	pidFile := filepath.Join(t.TempDir(), "pid")
	call := p.long("echo $$ > " + shellquote.Quote(pidFile) + ".tmp && mv " + shellquote.Quote(pidFile) + ".tmp " + shellquote.Quote(pidFile) + "; exec sleep 600")
	model := p.NewModel(t, agenttest.Calls(p.claim("T-HUNG --json")), agenttest.Calls(call), agenttest.Text("Done."))
	env := AgentEnv(t, ws.URL(), Interval, 1, 600)
	if p.HungCallRule {
		env["HEARTBEAT_HUNG_CALL_SECS"] = "0.5"
	}
	w := WatchTicket(t, ws, "T-HUNG")
	s := p.Start(t, model, project, agenttest.Options{Env: env})
	Poll(t, "the call's process and marker", func() bool { return Exists(pidFile) && p.inFlight(d, call) })
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("the call's pid %q: %v", data, err)
	}
	agent := s.AgentPid()
	if agent == 0 {
		t.Fatal("no agent process")
	}
	// While the call's process lives the reports are fresh (the premise).
	Poll(t, "a fresh report naming the call in flight", func() bool {
		return slices.ContainsFunc(BeatsOf(ws, "T-HUNG"), func(b warptest.Beat) bool { return b.Body.InFlight != "" && !b.Body.Stale })
	})
	if err := syscall.Kill(agent, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(agent, syscall.SIGCONT); s.Kill() })
	hungAt := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	Poll(t, "a stale report", func() bool {
		return slices.ContainsFunc(BeatsOf(ws, "T-HUNG"), func(b warptest.Beat) bool { return b.Body.Stale })
	})
	Poll(t, "the verdict stalled", func() bool { return slices.Contains(w.Verdicts(), warp.VerdictStalled) })
	w.Stop()
	for _, b := range BeatsOf(ws, "T-HUNG") {
		if b.Body.Stale && b.At.Before(hungAt) {
			t.Errorf("a stale report before the call hung: %+v", b.Body)
		}
	}
	if !p.inFlight(d, call) {
		t.Error("the marker is gone: the agent finished the call after all (the premise)")
	}
}

// WriteCommand is a shell command writing content to path (printf), for
// a CLI whose edits go through its shell in these scenarios.
func WriteCommand(path, content string) string {
	format := strings.NewReplacer(`\`, `\\`, "%", "%%", "\n", `\n`).Replace(content)
	return "printf " + shellquote.Quote(format) + " > " + shellquote.Quote(path)
}

// Progress describes m's agent to Progress, for the loop scenario alone
// (shell calls only): loop is how it is told, toldIn where (Progress.ToldIn;
// nil: apart from the call).
func (m *Matrix) Progress(loop LoopTold, toldIn func(agenttest.ToolResult) string) *Progress {
	return &Progress{Agent: m.Agent, NewModel: m.NewModel, Start: m.Start, Shell: m.Shell, ShellTool: m.ShellTool, Marker: m.Marker,
		Loop: loop, ToldIn: toldIn}
}
