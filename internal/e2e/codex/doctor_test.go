package codex_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

// doctorCheck runs `gyrum doctor --json` for home in project and returns
// its codex-trust check.
func doctorCheck(t *testing.T, home agenttest.Home, project string) (status, detail, fix string) {
	t.Helper()
	out, _, _ := e2etest.GyrumCode(t, project, map[string]string{"HOME": home.Dir, "CODEX_HOME": home.Config,
		"GYRUM_HOME": filepath.Join(home.Dir, ".gyrum"), "WARP_URL": "http://127.0.0.1:1"}, "doctor", "--json")
	var rep struct {
		Checks []struct{ Name, Status, Detail, Fix string } `json:"checks"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, out)
	}
	for _, c := range rep.Checks {
		if c.Name == "codex-trust" {
			return c.Status, c.Detail, c.Fix
		}
	}
	t.Fatalf("doctor has no codex-trust check:\n%s", out)
	return "", "", ""
}

// Untrusted hooks are never silent: after `gyrum setup --agents codex`
// (which writes no trust) doctor fails with the line to act on; once the
// hooks are trusted as Codex's own review trusts them, doctor passes —
// its hashes agree with the real Codex's.
func TestDoctorCodexTrust(t *testing.T) {
	bin := codex.Require(t)
	project := e2etest.NewProject(t)
	home := codex.NewHome(t)
	e2etest.Gyrum(t, project, map[string]string{"HOME": home.Dir, "CODEX_HOME": home.Config, "GYRUM_HOME": filepath.Join(home.Dir, ".gyrum")},
		"setup", "--agents", "codex", "--watchdog", "none")
	status, detail, fix := doctorCheck(t, home, project)
	if status != "fail" || fix == "" {
		t.Errorf("before trust: codex-trust %s (%s), fix %q; want fail with a fix", status, detail, fix)
	}
	t.Logf("before trust: %s\nfix: %s", detail, fix)
	for _, h := range ListHooks(t, bin, home, project) {
		if h.TrustStatus != "untrusted" {
			t.Errorf("codex lists %s, want untrusted after setup", h)
		}
	}
	TrustHooks(t, bin, home, project)
	if status, detail, _ := doctorCheck(t, home, project); status != "ok" {
		t.Errorf("after trust: codex-trust %s (%s), want ok", status, detail)
	}
}
