package doctor_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/agent"
	"github.com/gyrum-labs/warp/internal/doctor"
	"github.com/gyrum-labs/warp/internal/setup"
)

// wireAgents runs the real setup --agents for the user's scope, or the
// project's, with the host's gyrum.
func (h *host) wireAgents(project bool, flags ...string) {
	h.t.Helper()
	o := setup.Options{Binary: h.bin, Home: h.home, Watchdog: setup.WatchdogNone, Agents: flags}
	if project {
		o.Project = h.project
	}
	if _, err := setup.Run(context.Background(), o); err != nil {
		h.t.Fatal(err)
	}
}

func agentPath(t *testing.T, flag string, project, home string) string {
	t.Helper()
	a, ok := agent.ByFlag(flag)
	if !ok {
		t.Fatalf("no agent %q", flag)
	}
	return a.Hooks.Path(project, home, nil)
}

// Qwen Code and Copilot CLI as setup wires them: each file checked, and
// Copilot's own command (with --agent copilot) self-tested.
func TestAgentHooksWired(t *testing.T) {
	h := newHost(t, warpServer(t, nil))
	h.wireAgents(false, "qwen", "copilot")
	rep := h.run()
	wantStatus(t, rep, "qwen-hook", doctor.StatusOK, agentPath(t, "qwen", "", h.home))
	wantStatus(t, rep, "copilot-hook", doctor.StatusOK, agentPath(t, "copilot", "", h.home))
	announced := setup.AnnouncedCommand(setup.HookCommand(h.bin), "copilot")
	ran := false
	for _, c := range rep.Checks {
		if c.Name == "hook-run" && strings.Contains(c.Detail, announced) {
			ran = true
			if c.Status != doctor.StatusOK {
				t.Errorf("hook-run of %q: %s %s", announced, c.Status, c.Detail)
			}
		}
	}
	if !ran {
		t.Errorf("Copilot's hook %q was not self-tested:\n%s", announced, text(rep))
	}
	if !rep.OK {
		t.Errorf("doctor fails on a host set up for Qwen Code and Copilot:\n%s", text(rep))
	}
}

// An agent not set up gets no check; one set up by halves fails, and says
// what to run; a file that does not parse fails.
func TestAgentHooksPartialOrMalformed(t *testing.T) {
	h := newHost(t, warpServer(t, nil))
	h.wire("")
	for _, c := range h.run().Checks {
		if strings.HasSuffix(c.Name, "-hook") || strings.HasSuffix(c.Name, "-hook (project)") {
			t.Errorf("check %s on a host that wired no other agent", c.Name)
		}
	}
	h.wireAgents(false, "qwen")
	p := agentPath(t, "qwen", "", h.home)
	var doc map[string]map[string]any
	data, _ := os.ReadFile(p)
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc["hooks"], "PostToolUse")
	data, _ = json.Marshal(doc)
	os.WriteFile(p, data, 0o644)
	c := wantStatus(t, h.run(), "qwen-hook", doctor.StatusFail, "not PostToolUse")
	if c.Command != "gyrum setup --agents qwen" {
		t.Errorf("fix command %q", c.Command)
	}
	os.WriteFile(p, []byte("{\"hooks\": {\n"), 0o644)
	wantStatus(t, h.run(), "qwen-hook", doctor.StatusFail, p)
}

// Project scope: the file is checked, and so is the trust the agent needs
// to run it (Copilot: a trusted folder; Qwen Code: only with its folder
// trust on).
func TestAgentHooksProjectTrust(t *testing.T) {
	h := newHost(t, warpServer(t, nil))
	h.wire("")
	h.wireAgents(true, "qwen", "copilot")
	rep := h.run()
	wantStatus(t, rep, "qwen-hook (project)", doctor.StatusOK, filepath.Join(h.project, ".qwen", "settings.json"))
	wantStatus(t, rep, "copilot-hook (project)", doctor.StatusOK, filepath.Join(h.project, ".github", "hooks", "gyrum.json"))
	wantStatus(t, rep, "qwen-trust (project)", doctor.StatusOK, "folder trust is off")
	c := wantStatus(t, rep, "copilot-trust (project)", doctor.StatusFail, "not below a trusted folder")
	if !strings.Contains(c.Fix, "trust the folder") {
		t.Errorf("copilot-trust fix %q does not name the trust step", c.Fix)
	}
	cfg, _ := json.Marshal(map[string]any{"trustedFolders": []string{h.project}})
	os.MkdirAll(filepath.Join(h.home, ".copilot"), 0o755)
	os.WriteFile(filepath.Join(h.home, ".copilot", "config.json"), cfg, 0o600)
	os.MkdirAll(filepath.Join(h.home, ".qwen"), 0o755)
	os.WriteFile(filepath.Join(h.home, ".qwen", "settings.json"), []byte(`{"security":{"folderTrust":{"enabled":true}}}`), 0o600)
	rep = h.run()
	wantStatus(t, rep, "copilot-trust (project)", doctor.StatusOK, "trusts")
	c = wantStatus(t, rep, "qwen-trust (project)", doctor.StatusFail, "not a trusted folder")
	if !strings.Contains(c.Fix, "trust the folder") {
		t.Errorf("qwen-trust fix %q does not name the trust step", c.Fix)
	}
}
