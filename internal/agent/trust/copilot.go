package trust

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// copilot checks that GitHub Copilot CLI will run the gyrum hooks of a
// repository's .github/hooks/gyrum.json: it runs a repository's hooks
// only in a folder the user trusted, one listed in trustedFolders of its
// config.json ($COPILOT_HOME or ~/.copilot) or below one (measured, 1.0.102:
// a folder's trust covers what is below it, not a sibling sharing its
// prefix). The user's hooks (~/.copilot/hooks/) need no trust: the check
// is for a project only.
func copilot(in Input) []Result {
	if in.Cwd == "" {
		return nil
	}
	file := filepath.Join(in.Cwd, ".github", "hooks", "gyrum.json")
	data, err := os.ReadFile(file)
	if err != nil || !hasOurCommand(data, in.IsHookCommand) {
		return nil
	}
	c := Result{Name: "copilot-trust (project)"}
	dir := in.getenv("COPILOT_HOME")
	if dir == "" {
		dir = filepath.Join(in.Home, ".copilot")
	}
	config := filepath.Join(dir, "config.json")
	var cfg struct {
		TrustedFolders []string `json:"trustedFolders"`
	}
	if data, err := os.ReadFile(config); err == nil {
		if err := json.Unmarshal(data, &cfg); err != nil {
			c.Detail, c.Fix = fmt.Sprintf("cannot read GitHub Copilot CLI's %s: %v", config, err), "fix the file (Copilot cannot read it either)"
			return []Result{c}
		}
	}
	for _, f := range cfg.TrustedFolders {
		if within(f, in.Cwd) {
			c.OK, c.Detail = true, fmt.Sprintf("GitHub Copilot CLI trusts %s (%s in %s): it runs the hooks in %s", in.Cwd, f, config, file)
			return []Result{c}
		}
	}
	c.Detail = fmt.Sprintf("GitHub Copilot CLI skips the repository's hooks in %s: %s is not below a trusted folder of %s; its tool calls are no evidence of work and its leases show unwired",
		file, in.Cwd, config)
	c.Fix = fmt.Sprintf("run `copilot` in %s and trust the folder when it asks, or wire the user's hooks instead (they need no trust): gyrum setup --agents copilot", in.Cwd)
	return []Result{c}
}

// within reports whether dir is root or below it.
func within(root, dir string) bool {
	if root == "" {
		return false
	}
	rel, err := filepath.Rel(filepath.Clean(root), filepath.Clean(dir))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
