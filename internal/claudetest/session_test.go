package claudetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/agenttest"
)

// fakeCLI writes a shell script standing in for claude: it records its
// environment and arguments into $OUT, then runs body.
func fakeCLI(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "claude")
	script := "#!/bin/sh\nenv > \"$OUT/env\"\nprintf '%s\\n' \"$@\" > \"$OUT/args\"\n" + body + "\n"
	WriteFile(t, p, []byte(script), 0o755)
	return p
}

func TestSessionEnvironmentAndArgs(t *testing.T) {
	t.Setenv("CLAUDE_PID", "4242") // as inside an outer Claude Code session
	t.Setenv("LEAK_ME", "1")
	out := t.TempDir()
	bin := fakeCLI(t, "exit 3")
	m := NewFakeModel(t)
	s := Start(t, m, Options{Binary: bin, Dir: out, Prompt: "PROMPT X",
		Settings: map[string]any{"hooks": map[string]any{}},
		Env:      map[string]string{"OUT": out, "EXTRA": "yes", "DISABLE_TELEMETRY": ""}})
	if code := s.Wait(10 * time.Second); code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
	data, err := os.ReadFile(filepath.Join(out, "env"))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	for k, want := range map[string]string{
		"HOME": s.Home, "CLAUDE_CONFIG_DIR": s.ConfigDir, "CLAUDE_CODE_TMPDIR": s.TmpDir,
		"ANTHROPIC_BASE_URL": m.URL(), "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"IS_SANDBOX": "1", "EXTRA": "yes", "PATH": os.Getenv("PATH"),
	} {
		if env[k] != want {
			t.Errorf("%s=%q, want %q", k, env[k], want)
		}
	}
	for _, k := range []string{"CLAUDE_PID", "LEAK_ME", "DISABLE_TELEMETRY"} {
		if v, ok := env[k]; ok {
			t.Errorf("%s=%q leaked into the session", k, v)
		}
	}
	if !strings.HasPrefix(env["ANTHROPIC_API_KEY"], "sk-ant-") {
		t.Errorf("ANTHROPIC_API_KEY=%q", env["ANTHROPIC_API_KEY"])
	}
	args, _ := os.ReadFile(filepath.Join(out, "args"))
	got := strings.Split(strings.TrimSpace(string(args)), "\n")
	want := []string{"-p", "PROMPT X", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions", "--settings"}
	if len(got) != len(want)+1 || strings.Join(got[:len(want)], " ") != strings.Join(want, " ") {
		t.Errorf("args %q, want %q FILE", got, want)
	}
}

func TestSessionPermissionMode(t *testing.T) {
	out := t.TempDir()
	s := Start(t, NewFakeModel(t), Options{Binary: fakeCLI(t, "exit 0"), Dir: out, PermissionMode: "default",
		Env: map[string]string{"OUT": out}})
	s.WaitOK(10 * time.Second)
	args, _ := os.ReadFile(filepath.Join(out, "args"))
	if !strings.Contains(string(args), "--permission-mode\ndefault\n") || strings.Contains(string(args), "dangerously") {
		t.Errorf("args %q", args)
	}
	env, _ := os.ReadFile(filepath.Join(out, "env"))
	if strings.Contains(string(env), "IS_SANDBOX") {
		t.Error("IS_SANDBOX set without skip-permissions")
	}
}

// Kill ends the CLI and what it spawned, also what left its process group
// and its tree (a setsid'd grandchild, as the CLI's tool shells are).
func TestSessionKillsEverything(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finding detached processes by environment needs /proc")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	out := t.TempDir()
	bin := fakeCLI(t, `setsid sh -c 'echo $$ > "$OUT/detached"; exec sleep 300' </dev/null >/dev/null 2>&1 &
sleep 300 &
echo started > "$OUT/started"
wait`)
	s := Start(t, NewFakeModel(t), Options{Binary: bin, Dir: out, Env: map[string]string{"OUT": out}})
	Poll(t, 10*time.Second, "the fake CLI to start its children", func() bool {
		_, err1 := os.Stat(filepath.Join(out, "started"))
		_, err2 := os.Stat(filepath.Join(out, "detached"))
		return err1 == nil && err2 == nil
	})
	Poll(t, 10*time.Second, "two leftovers", func() bool { return len(s.Leftovers()) >= 2 })
	if d := s.Descendants(); len(d) == 0 {
		t.Errorf("no descendants:\n%s", s.TreeString())
	}
	s.Kill()
	if !s.Exited() {
		t.Fatal("not exited after Kill")
	}
	Poll(t, 5*time.Second, "no leftovers", func() bool { return len(s.Leftovers()) == 0 })
	if code := s.Wait(time.Second); code != 128+9 {
		t.Errorf("exit code %d, want 137", code)
	}
}

// Options.Wrap runs the CLI under a wrapper command: the wrapper is the
// process started (Pid), ClaudePid finds the CLI below it, and the CLI
// gets its usual arguments.
func TestSessionWrap(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("ClaudePid reads /proc")
	}
	out := t.TempDir()
	bin := fakeCLI(t, "touch \"$OUT/started\"; sleep 30")
	wrapper := filepath.Join(t.TempDir(), "wrapper")
	WriteFile(t, wrapper, []byte("#!/bin/sh\necho \"$1\" > \"$OUT/wrapper-arg\"\nshift\n\"$@\"\n"), 0o755)
	s := Start(t, NewFakeModel(t), Options{Binary: bin, Dir: out, Wrap: []string{wrapper, "W-ARG"},
		Env: map[string]string{"OUT": out}})
	Poll(t, 10*time.Second, "the wrapped CLI to start", func() bool {
		_, err := os.Stat(filepath.Join(out, "started"))
		return err == nil
	})
	if data, _ := os.ReadFile(filepath.Join(out, "wrapper-arg")); strings.TrimSpace(string(data)) != "W-ARG" {
		t.Errorf("wrapper argument %q", data)
	}
	cli := s.ClaudePid()
	if cli == 0 || cli == s.Pid() {
		t.Fatalf("ClaudePid %d, wrapper %d:\n%s", cli, s.Pid(), s.TreeString())
	}
	if p, ok := agenttest.Lookup(cli); !ok || p.PPID != s.Pid() {
		t.Errorf("the CLI %d is not the wrapper's child: %+v", cli, p)
	}
	args, _ := os.ReadFile(filepath.Join(out, "args"))
	if got := strings.Fields(string(args)); len(got) < 2 || got[0] != "-p" {
		t.Errorf("the wrapped CLI got args %q", got)
	}
	s.Kill()
	if alive := s.Leftovers(); len(alive) != 0 {
		t.Errorf("left after Kill: %v", alive)
	}
}
