package setup

import (
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
)

// unifiedDiff returns a unified diff of old → new (3 lines of context),
// labelled with name (the old side /dev/null for a file that did not
// exist); "" when they are equal.
func unifiedDiff(name string, old, new []byte, oldExisted bool) string {
	if string(old) == string(new) {
		return ""
	}
	from := name
	if !oldExisted {
		from = "/dev/null"
	}
	d, err := udiff.ToUnified(from, name, string(old), udiff.Lines(string(old), string(new)), udiff.DefaultContextLines)
	if err != nil {
		// The edits come from the same two texts: only a bug gets here.
		return "--- " + from + "\n+++ " + name + "\n(no diff: " + err.Error() + ")\n"
	}
	return d
}

// splitLines splits s after each newline; the last line may lack one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
