package proc_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/proc"
)

// TestMain lets the test binary act as a Unix-socket client: with
// PROC_TEST_DIAL set it connects there and waits to be killed.
func TestMain(m *testing.M) {
	if p := os.Getenv("PROC_TEST_DIAL"); p != "" {
		c, err := net.Dial("unix", p)
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("connected\n")
		buf := make([]byte, 1)
		c.Read(buf) // until the server closes or we are killed
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// dialer starts a real process that connects to the socket at path and
// returns once it is connected.
func dialer(t *testing.T, path, marker string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PROC_TEST_DIAL="+path, "PROC_TEST_MARKER="+marker)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	buf := make([]byte, 10)
	if n, _ := out.Read(buf); string(buf[:n]) != "connected\n" {
		t.Fatalf("dialer did not connect: %q", buf[:n])
	}
	return cmd
}

func TestUnixClientsAndEnviron(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	self := os.Getpid()
	if got, err := proc.UnixClients(self); err != nil || len(got) != 0 {
		t.Fatalf("no client yet: %v %v", got, err)
	}
	// A process not connected to us must not show.
	other := filepath.Join(t.TempDir(), "o.sock")
	oln, err := net.Listen("unix", other)
	if err != nil {
		t.Fatal(err)
	}
	defer oln.Close()
	go func() { c, _ := oln.Accept(); _ = c }()
	dialer(t, other, "stranger")

	a := dialer(t, path, "a")
	waitClients(t, self, []int{a.Process.Pid}) // not the stranger
	b := dialer(t, path, "b")
	want := []int{a.Process.Pid, b.Process.Pid}
	slices.Sort(want)
	waitClients(t, self, want)
	a.Process.Kill()
	a.Wait()
	waitClients(t, self, []int{b.Process.Pid})

	env, err := proc.Environ(b.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(env, "PROC_TEST_MARKER=b") || !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PROC_TEST_DIAL=") }) {
		t.Fatalf("environ of b lacks its variables: %q", env)
	}
	if _, err := proc.Environ(a.Process.Pid); err == nil {
		t.Fatal("environ of a reaped process: no error")
	}
	if _, err := proc.UnixClients(a.Process.Pid); err == nil {
		t.Fatal("clients of a reaped process: no error")
	}
}

// waitClients waits (the accept runs in a goroutine) until server's
// clients are want, and fails if one of never shows among them.
func waitClients(t *testing.T, server int, want []int) {
	t.Helper()
	var got []int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var err error
		if got, err = proc.UnixClients(server); err != nil {
			t.Fatal(err)
		}
		if slices.Equal(got, want) {
			return
		}
	}
	t.Fatalf("UnixClients(%d) = %v, want %v", server, got, want)
}

func TestListensRemote(t *testing.T) {
	if l, err := proc.ListensRemote(os.Getpid()); err != nil || l {
		t.Fatalf("before listening: %v %v", l, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if l, err := proc.ListensRemote(os.Getpid()); err != nil || !l {
		t.Fatalf("listening on %s: %v %v", ln.Addr(), l, err)
	}
}
