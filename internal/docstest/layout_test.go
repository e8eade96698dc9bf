package docstest

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestLayoutMapsEveryPackage: DESIGN's layout (section 5) names every
// package directly under internal/, so a new package is placed on the map
// when it is made (snapshot, handoff and gitcmd once went unlisted).
func TestLayoutMapsEveryPackage(t *testing.T) {
	design, err := os.ReadFile(filepath.Join(root, "docs", "DESIGN.md"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(root, "internal"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		n++
		if !regexp.MustCompile(`(?m)^internal/` + regexp.QuoteMeta(e.Name()) + `(/|\s)`).Match(design) {
			t.Errorf("internal/%s is not on DESIGN.md's layout map (a line starting with internal/%s)", e.Name(), e.Name())
		}
	}
	if n < 10 {
		t.Errorf("found %d packages under internal/, want many: is root right?", n)
	}
}
