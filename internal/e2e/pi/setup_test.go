package pi_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/agent"
	"github.com/gyrum-labs/warp/internal/agenttest"
	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/warptest"
)

// doctorChecks runs the real `gyrum doctor --json` in dir with env and
// returns its checks by name.
func doctorChecks(t *testing.T, dir string, env map[string]string) map[string]struct{ Status, Detail string } {
	t.Helper()
	out, _, _ := e2etest.GyrumCode(t, dir, env, "doctor", "--json")
	var rep struct {
		Checks []struct{ Name, Status, Detail string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, out)
	}
	m := map[string]struct{ Status, Detail string }{}
	for _, c := range rep.Checks {
		m[c.Name] = struct{ Status, Detail string }{c.Status, c.Detail}
	}
	return m
}

// `gyrum setup --agents pi` writes gyrum's extension at the user's
// scope, `gyrum doctor` finds it current and runs the hook it names, and
// `gyrum setup --uninstall --agents pi` removes it (and the extensions
// directory it alone filled), after which doctor has nothing of it to
// check.
func TestSetupDoctorUninstall(t *testing.T) {
	pi.Require(t)
	h := newHome(t)
	a, _ := agent.ByFlag("pi")
	path := filepath.Join(h.Config, a.Hooks.File)
	env := map[string]string{"HOME": h.Dir, "GYRUM_HOME": filepath.Join(h.Dir, ".gyrum"), "WARP_URL": "http://127.0.0.1:9"}
	c := doctorChecks(t, h.Dir, env)["pi-plugin"]
	if c.Status != "ok" || !strings.Contains(c.Detail, path) || !strings.Contains(c.Detail, "gyrum-hook") {
		t.Errorf("doctor's pi-plugin check %+v, want ok naming %s and gyrum-hook", c, path)
	}
	if r := doctorChecks(t, h.Dir, env)["hook-run"]; r.Status != "ok" {
		t.Errorf("doctor's hook-run %+v", r)
	}

	// Edited: doctor says so.
	data, _ := os.ReadFile(path)
	os.WriteFile(path, append(data, "// edited\n"...), 0o644)
	if c := doctorChecks(t, h.Dir, env)["pi-plugin"]; c.Status != "fail" || !strings.Contains(c.Detail, "differs") {
		t.Errorf("doctor's check of an edited plugin %+v, want fail", c)
	}
	e2etest.Gyrum(t, h.Dir, env, "setup", "--agents", "pi", "--watchdog", "none")

	baks, _ := filepath.Glob(path + ".bak-*")
	if len(baks) != 1 || !strings.HasSuffix(e2etest.ReadFile(baks[0]), "// edited\n") {
		t.Errorf("backups %v, want the edited file's", baks)
	}
	out := e2etest.Gyrum(t, h.Dir, env, "setup", "--uninstall", "--agents", "pi", "--watchdog", "none")
	if e2etest.Exists(path) {
		t.Errorf("%s left after --uninstall:\n%s", path, out)
	}
	// The backup is the user's: it stays, and so does its directory.
	for _, b := range baks {
		os.Remove(b)
	}
	e2etest.Gyrum(t, h.Dir, env, "setup", "--agents", "pi", "--watchdog", "none")
	e2etest.Gyrum(t, h.Dir, env, "setup", "--uninstall", "--agents", "pi", "--watchdog", "none")
	if e2etest.Exists(filepath.Dir(path)) {
		t.Errorf("%s left empty after --uninstall", filepath.Dir(path))
	}
	if _, ok := doctorChecks(t, h.Dir, env)["pi-plugin"]; ok {
		t.Error("doctor checks a pi extension after --uninstall")
	}
}

// A call that fails in the tool itself (a read of a file that does not
// exist) ends in tool_result all the same, with isError: the extension
// runs the hook with PostToolUseFailure. The call's marker goes, and the
// failure is the last activity.
func TestFailingToolCall(t *testing.T) {
	pi.Require(t)
	ws := warptest.Start(t)
	ws.Create("T-3")
	project := e2etest.NewProject(t)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)
	claim := claimCall("T-3 --json")
	bad := agenttest.Tool("read", map[string]any{"path": filepath.Join(project, "no-such-file")})
	model := agenttest.NewChat(t, agenttest.Calls(claim), agenttest.Calls(bad), agenttest.Text("Done."))
	s := start(t, model, project, agenttest.Options{Env: e2etest.AgentEnv(t, ws.URL(), interval, 30, 60)})
	s.WaitOK(e2etest.SessionTimeout)
	res, _ := model.ToolResult(bad.ID)
	if !strings.Contains(res.Content, "ENOENT") {
		t.Errorf("the read's result %q, want its failure", res.Content)
	}
	if ms, _ := d.InFlight(); len(ms) != 0 {
		t.Errorf("markers left after the failed call: %+v", ms)
	}
	rec, ok, _, err := d.ReadActivity()
	if err != nil || !ok || rec.Event != "PostToolUseFailure" || rec.Tool != "read" {
		t.Errorf("activity record %+v (ok %v, err %v), want hook/PostToolUseFailure/read", rec, ok, err)
	}
	// The claim's PostToolUse, the read's PreToolUse and its failure.
	if n := e2etest.HookEvents(d); n != 3 {
		t.Errorf("hook-events holds %d events, want 3", n)
	}
}
