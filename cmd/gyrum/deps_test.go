package main

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

// module is this repository's module path; the public client module
// (module+"/client") lives in its directory client/.
const module = "github.com/gyrum-labs/warp"

// gyrum and gyrum-hook run on every agent host and speak to warp only
// through its public client: they link no server code, neither the domain
// (whose errors and id rules the agent side takes from the client and
// internal/ticketid) nor the stores and their drivers.
func TestAgentSideLinksNoServerCode(t *testing.T) {
	banned := []string{
		module + "/internal/warp",
		module + "/internal/sqlite",
		module + "/internal/postgres",
		"github.com/jackc/pgx",
		"modernc.org/sqlite",
	}
	for _, goos := range []string{"linux", "darwin"} {
		for _, cmd := range []string{"cmd/gyrum", "cmd/gyrum-hook"} {
			for pkg, chain := range imports(t, goos, module+"/"+cmd) {
				for _, b := range banned {
					if pkg == b || strings.HasPrefix(pkg, b+"/") {
						t.Errorf("%s (GOOS=%s) links %s: %s", cmd, goos, pkg, strings.Join(chain, " -> "))
					}
				}
			}
		}
	}
}

// gyrum-hook runs on every tool call: linking an HTTP client costs each
// run milliseconds of start-up (net/http's initialisation: 7 → 13 ms for
// an empty program, farm-bench -n 40). It asks warp, rarely, by running
// gyrum (hook.AskByExec).
func TestHookLinksNoHTTPClient(t *testing.T) {
	for _, goos := range []string{"linux", "darwin"} {
		for pkg, chain := range imports(t, goos, module+"/cmd/gyrum-hook") {
			if pkg == "net/http" || pkg == module+"/client" {
				t.Errorf("cmd/gyrum-hook (GOOS=%s) links %s: %s", goos, pkg, strings.Join(chain, " -> "))
			}
		}
	}
}

// imports returns every package that main imports, directly or not, as
// built for goos without cgo, each with a chain of imports that reaches
// it. It reads the sources of this module and of the client module with
// go/build and does not look inside other modules (the standard library,
// cobra, x/sys), which import nothing of this repository.
func imports(t *testing.T, goos, main string) map[string][]string {
	t.Helper()
	ctx := build.Default
	ctx.GOOS, ctx.CgoEnabled = goos, false
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string][]string{main: {main}}
	queue := []string{main}
	for len(queue) > 0 {
		path := queue[0]
		queue = queue[1:]
		if path != module && !strings.HasPrefix(path, module+"/") {
			continue
		}
		p, err := ctx.ImportDir(filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(path, module))), 0)
		if err != nil {
			t.Fatalf("GOOS=%s: %s: %v", goos, path, err)
		}
		for _, imp := range p.Imports {
			if _, ok := seen[imp]; !ok {
				seen[imp] = append(append([]string(nil), seen[path]...), imp)
				queue = append(queue, imp)
			}
		}
	}
	if len(seen) < 10 {
		t.Fatalf("GOOS=%s: %s imports only %d packages: the walk is broken", goos, main, len(seen))
	}
	return seen
}
