package trust

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// checkGeminiTrust checks that Gemini CLI trusts the folder of a project
// whose .gemini/settings.json holds gyrum's hooks: it loads project
// settings (and runs their hooks) only in a folder its
// ~/.gemini/trustedFolders.json trusts, unless folder trust is turned off
// (security.folderTrust.enabled false in the user's settings).
func gemini(in Input) []Result {
	if in.Cwd == "" {
		return nil
	}
	file := filepath.Join(in.Cwd, ".gemini", "settings.json")
	data, err := os.ReadFile(file)
	if err != nil || !geminiHasOurHook(data, in.IsHookCommand) {
		return nil
	}
	c := Result{Name: "gemini-trust (project)"}
	geminiDir := filepath.Join(in.Home, ".gemini")
	if user, err := os.ReadFile(filepath.Join(geminiDir, "settings.json")); err == nil {
		var s struct {
			Security struct {
				FolderTrust struct {
					Enabled *bool `json:"enabled"`
				} `json:"folderTrust"`
			} `json:"security"`
		}
		if json.Unmarshal(user, &s) == nil && s.Security.FolderTrust.Enabled != nil && !*s.Security.FolderTrust.Enabled {
			c.OK, c.Detail = true, "Gemini CLI's folder trust is off: it runs the hooks in "+file
			return []Result{c}
		}
	}
	trustFile := filepath.Join(geminiDir, "trustedFolders.json")
	rules := map[string]string{}
	if data, err := os.ReadFile(trustFile); err == nil {
		if err := json.Unmarshal(data, &rules); err != nil {
			c.Detail, c.Fix = fmt.Sprintf("cannot read Gemini CLI's %s: %v", trustFile, err), "fix the file (Gemini CLI cannot read it either)"
			return []Result{c}
		}
	}
	if geminiTrusted(rules, in.Cwd) {
		c.OK, c.Detail = true, fmt.Sprintf("Gemini CLI trusts %s (%s): it runs the hooks in %s", in.Cwd, trustFile, file)
		return []Result{c}
	}
	c.Detail = fmt.Sprintf("Gemini CLI skips gyrum's hooks in %s without a word: %s is not a trusted folder in %s; its tool calls are no evidence of work and its leases show unwired",
		file, in.Cwd, trustFile)
	c.Fix = fmt.Sprintf("run `gemini` in %s and trust the folder when it asks (or with /permissions)", in.Cwd)
	return []Result{c}
}

// geminiTrusted applies Gemini CLI's folder rules to dir: TRUST_FOLDER
// trusts a folder and what is below it, TRUST_PARENT the folder's parent
// and what is below that, DO_NOT_TRUST distrusts exactly that folder.
func geminiTrusted(rules map[string]string, dir string) bool {
	dir = filepath.Clean(dir)
	if rules[dir] == "DO_NOT_TRUST" {
		return false
	}
	within := func(root string) bool {
		root = filepath.Clean(root)
		rel, err := filepath.Rel(root, dir)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
	}
	for path, rule := range rules {
		switch rule {
		case "TRUST_FOLDER":
			if within(path) {
				return true
			}
		case "TRUST_PARENT":
			if within(filepath.Dir(filepath.Clean(path))) {
				return true
			}
		}
	}
	return false
}

// geminiHasOurHook reports whether a Gemini CLI settings file has a gyrum
// hook in its "hooks" (event → [{matcher, hooks: [{command}]}]).
func geminiHasOurHook(data []byte, ours func(string) bool) bool {
	var doc struct {
		Hooks map[string]json.RawMessage `json:"hooks"`
	}
	if json.Unmarshal(data, &doc) != nil {
		return false
	}
	for _, raw := range doc.Hooks {
		var groups []struct {
			Hooks []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		}
		if json.Unmarshal(raw, &groups) != nil {
			continue
		}
		for _, g := range groups {
			for _, h := range g.Hooks {
				if ours(h.Command) {
					return true
				}
			}
		}
	}
	return false
}
