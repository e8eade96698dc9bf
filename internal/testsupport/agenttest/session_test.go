package agenttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// scriptAgent is an agent whose CLI is a shell script standing in for one:
// its Prepare passes the prompt and points it at the model.
var scriptAgent = &Agent{
	CLI:       CLI{Title: "script", Binary: "script-agent", EnvBinary: "AGENTTEST_SCRIPT_AGENT", Install: "fakeCLI"},
	ConfigDir: ".script",
	ConfigVar: "SCRIPT_CONFIG_DIR",
	Vars:      map[string]string{"SCRIPT_API_KEY": "dummy", "SCRIPT_TELEMETRY": "0"},
	Prepare: func(t testing.TB, s *Session, o Options) Launch {
		args := []string{"--prompt", o.Prompt}
		if o.Ask {
			args = append(args, "--ask")
		}
		return Launch{Args: append(args, o.Args...), Env: map[string]string{"SCRIPT_BASE_URL": s.Model.URL()}}
	},
}

// fakeCLI writes a shell script standing in for an agent CLI: it records
// its environment and arguments into $OUT, then runs body.
func fakeCLI(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script-agent")
	script := "#!/bin/sh\nenv > \"$OUT/env\"\nprintf '%s\\n' \"$@\" > \"$OUT/args\"\n" + body + "\n"
	WriteFile(t, p, []byte(script), 0o755)
	return p
}

func readEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	return env
}

// present returns a condition that holds once path exists.
func present(path string) func() bool { return func() bool { return exists(path) } }

func TestSessionEnvironmentAndArgs(t *testing.T) {
	t.Setenv("CLAUDE_PID", "4242") // as inside an outer agent session
	t.Setenv("LEAK_ME", "1")
	out := t.TempDir()
	m := NewChat(t)
	s := scriptAgent.Start(t, m, Options{Binary: fakeCLI(t, "exit 3"), Dir: out, Prompt: "PROMPT X", Ask: true, Args: []string{"--more"},
		Env: map[string]string{"OUT": out, "EXTRA": "yes", "SCRIPT_TELEMETRY": ""}})
	if code := s.Wait(10 * time.Second); code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
	env := readEnv(t, filepath.Join(out, "env"))
	for k, want := range map[string]string{
		"HOME": s.Home.Dir, "SCRIPT_CONFIG_DIR": s.Home.Config, "SCRIPT_API_KEY": "dummy", "SCRIPT_BASE_URL": m.URL(),
		"EXTRA": "yes", "PATH": os.Getenv("PATH"), "LANG": "C.UTF-8",
	} {
		if env[k] != want || s.Getenv(k) != want {
			t.Errorf("%s=%q (started with %q), want %q", k, env[k], s.Getenv(k), want)
		}
	}
	if s.Home.Config != filepath.Join(s.Home.Dir, ".script") || !exists(s.Home.Config) {
		t.Errorf("home %+v", s.Home)
	}
	for _, k := range []string{"CLAUDE_PID", "LEAK_ME", "SCRIPT_TELEMETRY"} {
		if v, ok := env[k]; ok {
			t.Errorf("%s=%q leaked into the session", k, v)
		}
	}
	if env[TagVar] == "" {
		t.Errorf("no %s tag", TagVar)
	}
	args, _ := os.ReadFile(filepath.Join(out, "args"))
	if got := strings.TrimSpace(string(args)); got != "--prompt\nPROMPT X\n--ask\n--more" {
		t.Errorf("args %q", got)
	}
}

func TestSessionDefaults(t *testing.T) {
	out := t.TempDir()
	home := scriptAgent.NewHome(t)
	s := scriptAgent.Start(t, NewChat(t), Options{Binary: fakeCLI(t, "exit 0"), Dir: out, Home: home,
		Env: map[string]string{"OUT": out}})
	s.WaitOK(10 * time.Second)
	args, _ := os.ReadFile(filepath.Join(out, "args"))
	if got := strings.TrimSpace(string(args)); got != "--prompt\nDo the task." {
		t.Errorf("args %q", got)
	}
	if s.Home != home || readEnv(t, filepath.Join(out, "env"))["HOME"] != home.Dir {
		t.Errorf("the session does not run in the HOME it was given")
	}
	if env := scriptAgent.Env(home, map[string]string{"X": "1", "PATH": ""}); strings.Join(env, " ") !=
		"HOME="+home.Dir+" LANG=C.UTF-8 "+optional("LOGNAME")+"SCRIPT_API_KEY=dummy SCRIPT_CONFIG_DIR="+home.Config+" SCRIPT_TELEMETRY=0 "+optional("USER")+"X=1" {
		t.Errorf("Env %q", env)
	}
}

// optional is "K=v " when the test has K, else "".
func optional(k string) string {
	if v := os.Getenv(k); v != "" {
		return k + "=" + v + " "
	}
	return ""
}

// Kill ends the CLI and what it spawned, also what left its process group
// and its tree (a setsid'd grandchild, as an agent's tool shells are).
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
	s := scriptAgent.Start(t, NewAnthropic(t), Options{Binary: bin, Dir: out, Env: map[string]string{"OUT": out}})
	Poll(t, 10*time.Second, "the fake CLI to start its children", func() bool {
		return exists(filepath.Join(out, "started")) && exists(filepath.Join(out, "detached"))
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
// process started (Pid), Find and AgentPid find the CLI below it, and the
// CLI gets its usual arguments.
func TestSessionWrap(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("Find reads /proc")
	}
	out := t.TempDir()
	bin := fakeCLI(t, "touch \"$OUT/started\"; sleep 30")
	wrapper := filepath.Join(t.TempDir(), "wrapper")
	WriteFile(t, wrapper, []byte("#!/bin/sh\necho \"$1\" > \"$OUT/wrapper-arg\"\nshift\n\"$@\"\n"), 0o755)
	s := scriptAgent.Start(t, NewGemini(t), Options{Binary: bin, Dir: out, Wrap: []string{wrapper, "W-ARG"},
		Env: map[string]string{"OUT": out}})
	Poll(t, 10*time.Second, "the wrapped CLI to start", present(filepath.Join(out, "started")))
	if data, _ := os.ReadFile(filepath.Join(out, "wrapper-arg")); strings.TrimSpace(string(data)) != "W-ARG" {
		t.Errorf("wrapper argument %q", data)
	}
	// The script runs as `/bin/sh BIN ...`: the binary is its argv[1].
	cli := s.Find(func(p Proc) bool { return len(p.Args) > 1 && p.Args[1] == bin })
	if cli == 0 || cli == s.Pid() {
		t.Fatalf("Find %d, wrapper %d:\n%s", cli, s.Pid(), s.TreeString())
	}
	if p, ok := Lookup(cli); !ok || p.PPID != s.Pid() {
		t.Errorf("the CLI %d is not the wrapper's child: %+v", cli, p)
	}
	if a := s.AgentPid(); a != cli {
		t.Errorf("AgentPid %d, want the CLI %d below the wrapper", a, cli)
	}
	if s.Find(func(p Proc) bool { return p.PID == s.Pid() }) != s.Pid() {
		t.Error("Find does not try the started process first")
	}
	if s.Find(func(Proc) bool { return false }) != 0 {
		t.Error("Find found what nothing matches")
	}
	args, _ := os.ReadFile(filepath.Join(out, "args"))
	if got := strings.Fields(string(args)); len(got) < 2 || got[0] != "--prompt" {
		t.Errorf("the wrapped CLI got args %q", got)
	}
	s.Kill()
	if alive := s.Leftovers(); len(alive) != 0 {
		t.Errorf("left after Kill: %v", alive)
	}
}

// Options.Terminal runs the CLI on a terminal of its own, sized, whose
// queries are answered: a TUI asking for the cursor position gets it.
func TestSessionTerminal(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("script (util-linux) is needed to give the CLI a terminal")
	}
	out := t.TempDir()
	bin := fakeCLI(t, `stty size > "$OUT/size"; [ -t 0 ] && echo yes > "$OUT/tty"
stty -icanon -echo min 1
printf '\033[6n'
dd bs=1 count=6 2>/dev/null | od -An -c > "$OUT/reply"
touch "$OUT/done"; sleep 30`)
	s := scriptAgent.Start(t, NewResponses(t), Options{Binary: bin, Dir: out, Terminal: true, Env: map[string]string{"OUT": out}})
	Poll(t, 20*time.Second, "the CLI to read its answer", present(filepath.Join(out, "done")))
	read := func(name string) string {
		data, _ := os.ReadFile(filepath.Join(out, name))
		return strings.Join(strings.Fields(string(data)), " ")
	}
	if size, tty, reply := read("size"), read("tty"), read("reply"); size != "40 120" || tty != "yes" || reply != `033 [ 1 ; 1 R` {
		t.Errorf("size %q, on a terminal %q, the answer to CSI 6n %q", size, tty, reply)
	}
	if env := readEnv(t, filepath.Join(out, "env")); env["TERM"] != "xterm-256color" {
		t.Errorf("TERM=%q", env["TERM"])
	}
	if !strings.Contains(s.Stdout(), "\x1b[6n") {
		t.Errorf("the terminal's output %q lacks the query", s.Stdout())
	}
}

func TestProcessTree(t *testing.T) {
	procs, err := Processes()
	if err != nil {
		t.Fatal(err)
	}
	var self *Proc
	for i := range procs {
		if procs[i].PID == os.Getpid() {
			self = &procs[i]
		}
	}
	if self == nil {
		t.Fatal("own process not listed")
	}
	found := false
	for _, p := range Descendants(procs, self.PPID) {
		if p.PID == self.PID {
			found = true
		}
	}
	if !found {
		t.Error("own process not a descendant of its parent")
	}
	if !strings.Contains(Tree(procs, self.PID), "agenttest") {
		t.Errorf("tree:\n%s", Tree(procs, self.PID))
	}
}

func TestVersionField(t *testing.T) {
	for _, tc := range []struct {
		out  string
		i    int
		want string
	}{
		{"2.1.328 (Claude Code)\n", 0, "2.1.328"},
		{"codex-cli 0.169.0\n", -1, "0.169.0"},
		{"", 0, ""},
		{"x", -2, ""},
	} {
		if got := VersionField(tc.i)(tc.out); got != tc.want {
			t.Errorf("VersionField(%d)(%q) = %q, want %q", tc.i, tc.out, got, tc.want)
		}
	}
}
