//go:build linux

package gyrumcli_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
)

// daemonScript stands in for Codex's app-server daemon (measured, 0.169.0:
// `codex app-server --listen unix:// --analytics-default-enabled
// --managed-daemon`, detached, serving the interactive app over a Unix
// socket and running its tool shells as its own children): it listens on
// $SOCK, holds every connection, and runs each line of its stdin as a
// shell command, its child, answering with the result as JSON.
const daemonScript = `
import json, os, socket, subprocess, sys, threading
s = socket.socket(socket.AF_UNIX)
s.bind(os.environ["SOCK"])
s.listen(8)
conns = []
def accept():
    while True:
        c, _ = s.accept()
        conns.append(c)
threading.Thread(target=accept, daemon=True).start()
print("ready", flush=True)
for line in sys.stdin:
    p = subprocess.run(line.strip(), shell=True, capture_output=True, text=True)
    print(json.dumps({"code": p.returncode, "stdout": p.stdout, "stderr": p.stderr}), flush=True)
`

const clientScript = `
import os, socket, time
c = socket.socket(socket.AF_UNIX)
c.connect(os.environ["SOCK"])
print("connected", flush=True)
time.sleep(600)
`

type fakeDaemon struct {
	t    *testing.T
	in   *os.File
	out  *bufio.Reader
	sock string
	pid  int
}

// startDaemon starts the stand-in with argv like the real daemon's and
// environment env (another session's).
func startDaemon(t *testing.T, env []string) *fakeDaemon {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 stands in for the daemon and its clients: not found")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "daemon.py")
	if err := os.WriteFile(script, []byte(daemonScript), 0o644); err != nil {
		t.Fatal(err)
	}
	// The interpreter itself under the name codex (a pyenv shim would
	// re-exec it and lose an argv[0] given by exec -a).
	real, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatal(err)
	}
	codex := filepath.Join(dir, "codex")
	if err := os.Symlink(strings.TrimSpace(string(real)), codex); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "app-server-control.sock")
	cmd := exec.Command(codex, script, "app-server", "--listen", "unix://", "--analytics-default-enabled", "--managed-daemon")
	cmd.Env = append(env, "SOCK="+sock)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	d := &fakeDaemon{t: t, in: in.(*os.File), out: bufio.NewReader(out), sock: sock, pid: cmd.Process.Pid}
	if l, _ := d.out.ReadString('\n'); l != "ready\n" {
		t.Fatalf("daemon stand-in: %q", l)
	}
	return d
}

// run runs a shell command as the daemon's child (a tool shell).
func (d *fakeDaemon) run(cmd string) result {
	d.t.Helper()
	if _, err := d.in.WriteString(cmd + "\n"); err != nil {
		d.t.Fatal(err)
	}
	l, err := d.out.ReadString('\n')
	if err != nil {
		d.t.Fatal(err)
	}
	var r struct {
		Code           int
		Stdout, Stderr string
	}
	if err := json.Unmarshal([]byte(l), &r); err != nil {
		d.t.Fatal(err)
	}
	return result{stdout: r.Stdout, stderr: r.Stderr, code: r.Code}
}

// client connects a session (a stand-in for the `codex` app) with env.
func (d *fakeDaemon) client(env []string) *exec.Cmd {
	d.t.Helper()
	cmd := exec.Command("python3", "-c", clientScript)
	cmd.Env = append(env, "SOCK="+d.sock)
	out, err := cmd.StdoutPipe()
	if err != nil {
		d.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if l, _ := bufio.NewReader(out).ReadString('\n'); l != "connected\n" {
		d.t.Fatalf("client stand-in: %q", l)
	}
	return cmd
}

func withVar(env []string, k, v string) []string {
	out := []string{}
	for _, kv := range env {
		if !strings.HasPrefix(kv, k+"=") {
			out = append(out, kv)
		}
	}
	return append(out, k+"="+v)
}

// TestCodexDaemonWatchesClient: start-work run in a tool shell of the
// daemon watches the session's client, not the daemon, and takes the
// session's WARP_URL, not the one the daemon inherited from whoever
// started it; the lease ends when the client quits while the daemon runs
// on. The refusals: no client, two clients.
func TestCodexDaemonWatchesClient(t *testing.T) {
	e := newEnv(t)
	other := warptest.Start(t) // the server of the session that started the daemon
	d := startDaemon(t, withVar(e.environ(), "WARP_URL", other.URL()))
	e.ws.Create("T-1")
	e.ws.Create("T-2")
	other.Create("T-1")
	gy := func(ticket string) result {
		return d.run("cd " + t.TempDir() + " && " + gyrumBin + " start-work --json " + ticket)
	}

	r := gy("T-2")
	if r.code != 1 || !strings.Contains(r.stderr, "no connected client") || !strings.Contains(r.stderr, "codex --no-daemon") {
		t.Fatalf("no client: exit %d, stderr %q", r.code, r.stderr)
	}

	c := d.client(e.environ())
	sr := e.startResult(gy("T-1"))
	if sr.WatchedHow != "app-server-client" || sr.WatchedPID != c.Process.Pid {
		t.Fatalf("watched %d (%s), want the client %d (app-server-client)", sr.WatchedPID, sr.WatchedHow, c.Process.Pid)
	}
	// The daemon runs the client's tool calls: the loop is told which
	// process it is.
	if wd, err := gyrumdir.At(sr.Dir); err != nil {
		t.Fatal(err)
	} else if id, err := wd.ReadPID(gyrumdir.ServerPIDFile); err != nil || id.PID != d.pid {
		t.Errorf("%s: %v %v, want the daemon %d", gyrumdir.ServerPIDFile, id, err, d.pid)
	}
	if l := e.ws.Lease("T-1"); l.Epoch == 0 {
		t.Fatalf("no lease on the session's server: %+v", l)
	}
	if v := other.Ticket("T-1"); v.Lease != nil {
		t.Fatalf("claimed on the daemon's inherited WARP_URL: %+v", v.Lease)
	}
	if len(e.loopsRunning()) != 1 {
		t.Fatal("no loop running")
	}

	c.Process.Kill()
	c.Wait()
	warptest.WaitFor(t, "the loop to end after the client quit", func() bool { return len(e.loopsRunning()) == 0 })
	if r := d.run("true"); r.code != 0 {
		t.Fatal("daemon stand-in gone")
	}

	d.client(e.environ())
	d.client(e.environ())
	r = gy("T-2")
	if r.code != 1 || !strings.Contains(r.stderr, "2 connected clients") {
		t.Fatalf("two clients: exit %d, stderr %q", r.code, r.stderr)
	}
	if v := e.ws.Ticket("T-2"); v.Lease != nil {
		t.Fatalf("refused start-work leaked a lease: %+v", v.Lease)
	}
	if n := len(e.loopsRunning()); n != 0 {
		t.Fatalf("refused start-work left %d loops", n)
	}
}
