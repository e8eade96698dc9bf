package gyrumcli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/gyrumcli"
	"github.com/gyrum-labs/warp/internal/setup"
)

// setupApp runs gyrum in-process in dir with only the variables of vars
// set (HOME among them), the test binary as the gyrum the hooks name.
func setupApp(t *testing.T, dir string, vars map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	app := &gyrumcli.App{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv: func(k string) string { return vars[k] }, Executable: gyrumBin,
		Getwd: func() (string, error) { return dir, nil }}
	code := app.Run(context.Background(), args)
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

func TestSetupInstructionsPrints(t *testing.T) {
	dir := t.TempDir()
	r := setupApp(t, dir, nil, "setup", "--instructions")
	if r.code != 0 || r.stdout != setup.Instructions() || r.stderr != "" {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("printing wrote files: %v", ents)
	}
}

// --instructions=FILE appends the snippet to a real file once, keeps the
// user's content, changes nothing on a second run and removes exactly its
// block with --uninstall.
func TestSetupInstructionsFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "AGENTS.md")
	user := "# Agents\n\nUse `make check` before pushing.\n"
	if err := os.WriteFile(path, []byte(user), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"HOME": t.TempDir()}

	r := setupApp(t, dir, vars, "setup", "--instructions=AGENTS.md", "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "would update "+path) || !strings.Contains(r.stdout, "+"+setup.InstructionsBegin) {
		t.Fatalf("dry run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got, _ := os.ReadFile(path); string(got) != user {
		t.Fatalf("dry run changed the file")
	}

	r = setupApp(t, dir, vars, "setup", "--instructions=AGENTS.md")
	if r.code != 0 || !strings.Contains(r.stdout, "updated "+path+": add the gyrum instructions") {
		t.Fatalf("install: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	got, _ := os.ReadFile(path)
	want := user + "\n" + setup.InstructionsBegin + "\n" + setup.Instructions() + setup.InstructionsEnd + "\n"
	if string(got) != want {
		t.Fatalf("file:\n%s\nwant:\n%s", got, want)
	}
	// Nothing else was touched: no hook settings, no schedule.
	if _, err := os.Stat(filepath.Join(vars["HOME"], ".claude")); !os.IsNotExist(err) {
		t.Errorf("--instructions wrote the Claude settings")
	}

	r = setupApp(t, dir, vars, "setup", "--instructions="+path)
	if r.code != 0 || !strings.Contains(r.stdout, "nothing to change") {
		t.Fatalf("second install: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if again, _ := os.ReadFile(path); !bytes.Equal(again, got) {
		t.Errorf("second install changed the file")
	}

	r = setupApp(t, dir, vars, "setup", "--instructions=AGENTS.md", "--uninstall")
	if r.code != 0 || !strings.Contains(r.stdout, "updated "+path+": remove the gyrum instructions") {
		t.Fatalf("uninstall: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if after, _ := os.ReadFile(path); string(after) != user {
		t.Errorf("after uninstall:\n%q\nwant:\n%q", after, user)
	}

	// A file created for the snippet alone is removed with it.
	r = setupApp(t, dir, vars, "setup", "--instructions=CLAUDE.md")
	if r.code != 0 || !strings.Contains(r.stdout, "created ") {
		t.Fatalf("create: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	setupApp(t, dir, vars, "setup", "--instructions=CLAUDE.md", "--uninstall")
	if _, err := os.Stat(filepath.Join(dir, "CLAUDE.md")); !os.IsNotExist(err) {
		t.Errorf("uninstall left the CLAUDE.md it created")
	}
}

func TestSetupInstructionsErrors(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "CLAUDE.md")
	os.WriteFile(broken, []byte("intro\n<!-- gyrum:begin -->\nhalf a block\n"), 0o644)
	cases := []struct {
		args []string
		code int
		says string
	}{
		{[]string{"setup", "--instructions", "CLAUDE.md"}, 2, "--instructions takes its file with '=': gyrum setup --instructions=CLAUDE.md"},
		{[]string{"setup", "--instructions", "--agents", "codex"}, 2, "--instructions works alone"},
		{[]string{"setup", "--instructions", "--uninstall"}, 2, "--uninstall and --dry-run need a file"},
		{[]string{"setup", "--instructions="}, 2, "the file name is empty"},
		{[]string{"setup", "--instructions=" + dir}, 2, "not a regular file"},
		{[]string{"setup", "--instructions=CLAUDE.md"}, 1, broken + ":2: a gyrum:begin marker without a gyrum:end"},
		{[]string{"setup", "stray"}, 2, "setup takes no arguments"},
	}
	for _, tc := range cases {
		r := setupApp(t, dir, map[string]string{"HOME": t.TempDir()}, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.says) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d saying %q", tc.args, r.code, r.stderr, tc.code, tc.says)
		}
	}
	if got, _ := os.ReadFile(broken); string(got) != "intro\n<!-- gyrum:begin -->\nhalf a block\n" {
		t.Errorf("refused file changed: %q", got)
	}
}

// --agents wires each agent's documented events, and tells the user that
// Codex runs the hook only once it is trusted — only when setup changed
// Codex's file.
func TestSetupAgentsWiring(t *testing.T) {
	home := t.TempDir()
	vars := map[string]string{"HOME": home}
	hook := setup.HookCommand(gyrumBin)
	r := setupApp(t, home, vars, "setup", "--watchdog", "none", "--agents", "codex,gemini", "--agents", "cursor")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"gyrum: warning: Codex runs the gyrum hook only after you trust it", "open /hooks"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	files := map[string][]string{
		filepath.Join(home, ".codex", "hooks.json"):     {`"PreToolUse"`, `"PostToolUse"`},
		filepath.Join(home, ".gemini", "settings.json"): {`"BeforeTool"`, `"AfterTool"`},
		filepath.Join(home, ".cursor", "hooks.json"):    {`"preToolUse"`, `"postToolUse"`, `"postToolUseFailure"`},
		filepath.Join(home, ".claude", "settings.json"): {`"PreToolUse"`, `"PostToolUse"`, `"PostToolUseFailure"`},
	}
	for path, events := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		for _, ev := range events {
			if !strings.Contains(string(data), ev) {
				t.Errorf("%s lacks %s:\n%s", path, ev, data)
			}
		}
		if n := strings.Count(string(data), hook); n != len(events) {
			t.Errorf("%s runs the hook %d times, want %d:\n%s", path, n, len(events), data)
		}
	}

	r = setupApp(t, home, vars, "setup", "--watchdog", "none", "--agents", "codex,gemini,cursor")
	if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, "nothing to change") {
		t.Errorf("second run: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}

	r = setupApp(t, home, vars, "setup", "--watchdog", "none", "--agents", "codex,gemini,cursor", "--uninstall")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("uninstall: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for path := range files {
		if data, _ := os.ReadFile(path); strings.Contains(string(data), hook) {
			t.Errorf("%s keeps the hook after uninstall:\n%s", path, data)
		}
	}
}
