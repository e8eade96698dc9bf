package trust

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// qwen checks that Qwen Code will run the gyrum hooks of a project's
// .qwen/settings.json: with its folder trust on (security.folderTrust.enabled
// in the user's settings; off by default) it loads a project's hooks only
// in a folder its trustedFolders.json trusts, by Gemini CLI's rules (Qwen
// Code is its fork). Measured, 0.24.4: docs/agents/qwen-code.md.
func qwen(in Input) []Result {
	if in.Cwd == "" {
		return nil
	}
	file := filepath.Join(in.Cwd, ".qwen", "settings.json")
	data, err := os.ReadFile(file)
	if err != nil || !hasOurCommand(data, in.IsHookCommand) {
		return nil
	}
	c := Result{Name: "qwen-trust (project)"}
	qwenDir := in.getenv("QWEN_HOME")
	if qwenDir == "" {
		qwenDir = filepath.Join(in.Home, ".qwen")
	}
	var user struct {
		Security struct {
			FolderTrust struct {
				Enabled *bool `json:"enabled"`
			} `json:"folderTrust"`
		} `json:"security"`
	}
	if data, err := os.ReadFile(filepath.Join(qwenDir, "settings.json")); err == nil {
		_ = json.Unmarshal(data, &user)
	}
	if e := user.Security.FolderTrust.Enabled; e == nil || !*e {
		c.OK, c.Detail = true, "Qwen Code's folder trust is off (its default): it runs the hooks in "+file
		return []Result{c}
	}
	trustFile := filepath.Join(qwenDir, "trustedFolders.json")
	rules := map[string]string{}
	if data, err := os.ReadFile(trustFile); err == nil {
		if err := json.Unmarshal(data, &rules); err != nil {
			c.Detail, c.Fix = fmt.Sprintf("cannot read Qwen Code's %s: %v", trustFile, err), "fix the file (Qwen Code cannot read it either)"
			return []Result{c}
		}
	}
	if geminiTrusted(rules, in.Cwd) {
		c.OK, c.Detail = true, fmt.Sprintf("Qwen Code trusts %s (%s): it runs the hooks in %s", in.Cwd, trustFile, file)
		return []Result{c}
	}
	c.Detail = fmt.Sprintf("Qwen Code skips gyrum's hooks in %s without a word: its folder trust is on and %s is not a trusted folder in %s; its tool calls are no evidence of work and its leases show unwired",
		file, in.Cwd, trustFile)
	c.Fix = fmt.Sprintf("run `qwen` in %s and trust the folder when it asks (or with /permissions), or wire the user's hooks instead: gyrum setup --agents qwen", in.Cwd)
	return []Result{c}
}

// hasOurCommand reports whether a hooks document (Claude Code's grouped
// shape or a flat list per event) has a handler whose "command" (or
// Copilot's "bash") is gyrum's hook.
func hasOurCommand(data []byte, ours func(string) bool) bool {
	if ours == nil {
		return false
	}
	var doc struct {
		Hooks map[string][]struct {
			Command string `json:"command"`
			Bash    string `json:"bash"`
			Hooks   []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if json.Unmarshal(data, &doc) != nil {
		return false
	}
	for _, entries := range doc.Hooks {
		for _, e := range entries {
			if ours(e.Command) || ours(e.Bash) {
				return true
			}
			for _, h := range e.Hooks {
				if ours(h.Command) {
					return true
				}
			}
		}
	}
	return false
}
