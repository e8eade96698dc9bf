package sim_test

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Ctrl-C on a real warpsim process: it stops every process it
// started and removes its directory before it exits.
func TestInterruptStopsEverythingAndRemovesTheDirectory(t *testing.T) {
	tmp := t.TempDir()
	cmd := exec.Command(filepath.Join(bin, "warpsim"), "--agents", "10", "--time-scale", "600", "--gyrum", gyrumBin())
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var log []string
	deadline := time.After(20 * time.Second)
	for started := false; !started; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("warpsim ended before the scenario started:\n%s", strings.Join(log, "\n"))
			}
			log = append(log, l)
			started = strings.Contains(l, "scenario started")
		case <-deadline:
			t.Fatalf("no 'scenario started' within 20 s:\n%s", strings.Join(log, "\n"))
		}
	}
	// Wait until loops run and watched processes exist: the run is in full
	// swing. On a loaded machine the processes can be there a moment before
	// the first loop has registered: both are waited for.
	until := time.Now().Add(10 * time.Second)
	registered := func() int {
		regs, _ := filepath.Glob(filepath.Join(tmp, "warp-sim-*", "gyrum-home", "run", "*.json"))
		return len(regs)
	}
	for len(processesMarked(t, tmp)) < 16 || registered() == 0 {
		if time.Now().After(until) {
			t.Fatalf("after 10 s: %d processes of the run, %d loops registered; want 16 and one", len(processesMarked(t, tmp)), registered())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for l := range lines {
			log = append(log, l)
		}
		done <- cmd.Wait()
	}()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("warpsim still running 30 s after SIGINT")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Errorf("exit after SIGINT: got %v, want a non-zero exit", err)
	}
	if !strings.Contains(strings.Join(log, "\n"), "interrupted") {
		t.Errorf("stderr does not say the run was interrupted:\n%s", strings.Join(log, "\n"))
	}
	if stdout.Len() != 0 {
		t.Errorf("an interrupted run printed a report:\n%s", stdout.String())
	}
	assertCleanedUp(t, tmp)
}
