package agenttest

import (
	"crypto/rand"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RunOptions configure StartRun.
type RunOptions struct {
	// Name names the CLI in messages ("claude").
	Name string
	// Bin and Args are the command; Wrap, when set, runs it under another
	// (Wrap[0] Wrap[1:]... Bin Args...).
	Bin  string
	Args []string
	Wrap []string
	// Dir is the working directory.
	Dir string
	// Env is the whole environment; empty values are left out. The
	// run's tag (TagVar=random) is added.
	Env map[string]string
	// TagVar names the variable that marks every process of the run, so
	// the cleanup finds what the CLI spawned after it was re-parented.
	TagVar string
	// StdoutLabel heads stdout in the failure log ("stdout").
	StdoutLabel string
	// Summary, when set, adds the fake model's requests to the failure
	// log.
	Summary func() string
	// Cleanup, when set, runs at the end of the test after the kill.
	Cleanup func()
	// Command, when set, builds the command in place of Bin, Args and
	// Wrap (a CLI put on a terminal of its own by another program).
	Command func() *exec.Cmd
	// Terminal, when set, runs the CLI as on a terminal: its stdin is a
	// pipe the run holds open until Kill, and its output goes through
	// Terminal (given the output, the stdout file, which Terminal closes,
	// and the stdin pipe, to answer what the CLI asks its terminal).
	Terminal func(out io.ReadCloser, stdout, stdin *os.File)
}

// Run is one real agent CLI started for a test: in its own process group,
// stdin /dev/null, stdout and stderr in files (not pipes: Wait returns
// when the CLI exits even if something it spawned still holds the
// descriptors), every process of it tagged in its environment. At the end
// of the test everything it spawned is killed and, if the test failed,
// its output and the fake's requests go to the test log.
type Run struct {
	t testing.TB
	o RunOptions
	// Cmd is the started command.
	Cmd *exec.Cmd
	// Env is the environment it was started with, sorted.
	Env []string
	// Started is when it was started.
	Started time.Time

	tag        string
	stdin      *os.File // Terminal: the write end of the CLI's stdin
	stdoutPath string
	stderrPath string
	done       chan struct{}
	code       int
	ended      time.Time
	killOnce   sync.Once
}

// StartRun starts the CLI as o says, or fails the test.
func StartRun(t testing.TB, o RunOptions) *Run {
	t.Helper()
	root := t.TempDir()
	r := &Run{t: t, o: o, tag: rand.Text(), done: make(chan struct{}),
		stdoutPath: filepath.Join(root, "stdout.txt"), stderrPath: filepath.Join(root, "stderr.txt")}
	for k, v := range o.Env {
		if v != "" && k != o.TagVar {
			r.Env = append(r.Env, k+"="+v)
		}
	}
	r.Env = append(r.Env, o.TagVar+"="+r.tag)
	sort.Strings(r.Env)
	stdout, err := os.Create(r.stdoutPath)
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(r.stderrPath)
	if err != nil {
		t.Fatal(err)
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	var cmd *exec.Cmd
	switch {
	case o.Command != nil:
		cmd = o.Command()
	case len(o.Wrap) > 0:
		cmd = exec.Command(o.Wrap[0], append(append(append([]string(nil), o.Wrap[1:]...), o.Bin), o.Args...)...)
	default:
		cmd = exec.Command(o.Bin, o.Args...)
	}
	cmd.Dir, cmd.Env = o.Dir, r.Env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, stdout, stderr
	closeAfter := []*os.File{stdout, stderr, devnull}
	if o.Terminal != nil {
		in, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r.stdin = w
		cmd.Stdin, cmd.Stdout = in, pw
		go o.Terminal(pr, stdout, w)
		closeAfter = []*os.File{stderr, devnull, in, pw}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r.Cmd = cmd
	r.Started = time.Now()
	err = cmd.Start()
	for _, f := range closeAfter {
		f.Close()
	}
	if err != nil {
		if o.Cleanup != nil {
			o.Cleanup()
		}
		t.Fatalf("start %s: %v", o.Bin, err)
	}
	go func() {
		_ = cmd.Wait()
		r.ended = time.Now()
		r.code = exitCode(cmd.ProcessState)
		close(r.done)
	}()
	t.Cleanup(func() {
		r.Kill()
		if t.Failed() {
			r.logOutput()
		}
		if o.Cleanup != nil {
			o.Cleanup()
		}
	})
	return r
}

func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// Pid is the pid of the process started (the CLI, or Wrap's program).
func (r *Run) Pid() int { return r.Cmd.Process.Pid }

// Done is closed when the started process has exited.
func (r *Run) Done() <-chan struct{} { return r.done }

// Exited reports whether the started process has exited.
func (r *Run) Exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// Ended waits for the started process to exit and returns when its exit
// was seen.
func (r *Run) Ended() time.Time {
	<-r.done
	return r.ended
}

// Wait waits up to timeout for the started process to exit and returns
// its exit code (128+N for a signal N); on timeout it fails the test.
func (r *Run) Wait(timeout time.Duration) int {
	r.t.Helper()
	select {
	case <-r.done:
		return r.code
	case <-time.After(timeout):
		r.t.Fatalf("%s (pid %d) still running after %v; process tree:\n%s", r.o.Name, r.Pid(), timeout, r.TreeString())
		return -1
	}
}

// WaitOK is Wait that also fails the test on a non-zero exit code.
func (r *Run) WaitOK(timeout time.Duration) {
	r.t.Helper()
	if code := r.Wait(timeout); code != 0 {
		r.t.Fatalf("%s exited %d\nstderr:\n%s", r.o.Name, code, r.Stderr())
	}
}

// Kill sends SIGKILL to the run's process group and to every process it
// spawned (found by its tag, and by ancestry while it runs), then reaps
// it. It is idempotent and runs at the end of every test.
func (r *Run) Kill() {
	r.killOnce.Do(func() {
		if r.stdin != nil {
			defer r.stdin.Close()
		}
		pid := r.Pid()
		victims := map[int]bool{}
		if !r.Exited() {
			if procs, err := Processes(); err == nil {
				for _, p := range Descendants(procs, pid) {
					victims[p.PID] = true
				}
			}
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		for range 5 {
			for _, p := range Tagged(r.o.TagVar + "=" + r.tag) {
				victims[p] = true
			}
			if len(victims) == 0 {
				break
			}
			for p := range victims {
				if p > 1 && p != os.Getpid() {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
			}
			clear(victims)
			time.Sleep(20 * time.Millisecond)
		}
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			r.t.Errorf("%s (pid %d) not reaped 10 s after SIGKILL", r.o.Name, pid)
		}
	})
}

// Leftovers returns the pids of live processes that carry the run's tag,
// the started process left out.
func (r *Run) Leftovers() []int {
	var out []int
	for _, pid := range Tagged(r.o.TagVar + "=" + r.tag) {
		if p, ok := procStat(pid); ok && p.PID != r.Pid() {
			out = append(out, pid)
		}
	}
	return out
}

// Stdout returns what the CLI printed on stdout so far.
func (r *Run) Stdout() string {
	data, _ := os.ReadFile(r.stdoutPath)
	return string(data)
}

// Stderr returns what the CLI printed on stderr so far.
func (r *Run) Stderr() string {
	data, _ := os.ReadFile(r.stderrPath)
	return string(data)
}

// Descendants returns the started process's descendants now.
func (r *Run) Descendants() []Proc {
	procs, err := Processes()
	if err != nil {
		return nil
	}
	return Descendants(procs, r.Pid())
}

// Find returns the pid of the started process when match holds of it,
// else of its first descendant (parents before their children) that match
// holds of; 0 when none does.
func (r *Run) Find(match func(Proc) bool) int {
	if p, ok := Lookup(r.Pid()); ok && match(p) {
		return p.PID
	}
	for _, p := range r.Descendants() {
		if match(p) {
			return p.PID
		}
	}
	return 0
}

// Getenv returns the value of key in the environment the run was started
// with ("" when it has none).
func (r *Run) Getenv(key string) string {
	for _, kv := range r.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// TreeString formats the started process and its descendants now.
func (r *Run) TreeString() string {
	procs, err := Processes()
	if err != nil {
		return err.Error()
	}
	return Tree(procs, r.Pid())
}

// logOutput puts the run's output and the fake's requests in the test log.
func (r *Run) logOutput() {
	tail := func(x string) string {
		const max = 16 << 10
		if len(x) > max {
			return "...\n" + x[len(x)-max:]
		}
		return x
	}
	label := r.o.StdoutLabel
	if label == "" {
		label = "stdout"
	}
	summary := ""
	if r.o.Summary != nil {
		summary = r.o.Summary()
	}
	r.t.Logf("%s pid %d exit %d\n--- %s:\n%s\n--- stderr:\n%s\n--- requests:\n%s",
		r.o.Name, r.Pid(), r.code, label, tail(r.Stdout()), tail(r.Stderr()), summary)
}
