package qwen_test

// What Qwen Code does with a project's hooks and its folder trust,
// measured (docs/agents/qwen-code.md, Trust; doctor's qwen-trust check).

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
)

// The project's hooks (gyrum setup --project --agents qwen) run in any
// folder while Qwen Code's folder trust is off, its default. With
// security.folderTrust.enabled in the user's settings, an untrusted
// folder runs none of them (and headless --yolo gets no shell: the claim
// never runs), and a folder trusted in trustedFolders.json runs them all.
func TestProjectHooksAndFolderTrust(t *testing.T) {
	qwen.Require(t)
	on := map[string]any{"security": map[string]any{"folderTrust": map[string]any{"enabled": true}}}
	for _, c := range []struct {
		name     string
		settings map[string]any
		trusted  bool
		events   int64 // hook runs counted after the claim; -1: no claim at all
	}{
		{"trust-off", nil, false, 3},
		{"trust-on-untrusted", on, false, -1},
		{"trust-on-trusted", on, true, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := warptest.Start(t)
			ws.Create("T-1")
			project := e2etest.NewProject(t)
			setupHooks(t, project)
			home := qwen.NewHome(t)
			if c.trusted {
				data, _ := json.Marshal(map[string]string{project: "TRUST_FOLDER"})
				agenttest.WriteFile(t, filepath.Join(home.Config, "trustedFolders.json"), data, 0o600)
			}
			claim := claimCall("T-1 --json")
			work := Shell("echo worked")
			model := agenttest.NewChat(t, agenttest.Calls(claim), agenttest.Calls(work), agenttest.Text("Done."))
			s := start(t, model, project, agenttest.Options{Home: home, Settings: c.settings, Env: e2etest.AgentEnv(t, ws.URL(), 0.2, 30, 60)})
			s.WaitOK(e2etest.SessionTimeout)
			d, err := gyrumdir.At(project)
			if c.events < 0 {
				if err == nil {
					if _, lerr := d.ReadLease(); lerr == nil {
						t.Errorf("the claim ran in an untrusted folder with folder trust on")
					}
				}
				res, _ := model.ToolResult(claim.ID)
				t.Logf("the claim's result in the untrusted folder: %q", res.Content)
				if !strings.Contains(res.Content, "declined") && !strings.Contains(res.Content, "permission") {
					t.Errorf("the claim's result %q, want it refused", res.Content)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := e2etest.HookEvents(d); n != c.events {
				t.Errorf("hook-events %d after the claim and one call, want %d", n, c.events)
			}
		})
	}
}
