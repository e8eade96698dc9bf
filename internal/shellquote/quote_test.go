package shellquote_test

import (
	"os/exec"
	"testing"

	"github.com/gyrum-labs/warp/internal/shellquote"
)

// What Quote writes, /bin/sh reads back as the one word it started from.
func TestQuoteRoundTripsThroughSh(t *testing.T) {
	words := []string{"", "plain", "/a/b-c_d.e", "with space", "it's", "''", `a"b`, "$HOME", "`id`", "a\\b", "semi;colon", "new\nline", "*", "~", "#x", "ünï", "a'b'c"}
	for _, w := range words {
		q := shellquote.Quote(w)
		out, err := exec.Command("/bin/sh", "-c", `printf '%s|' `+q+` "$#"`, "sh").Output()
		if err != nil {
			t.Fatalf("sh -c with %s: %v", q, err)
		}
		if want := w + "|0|"; string(out) != want {
			t.Errorf("Quote(%q) = %s, which sh reads as %q; want %q", w, q, out, want)
		}
	}
	if got := shellquote.Quote("/plain/path"); got != "/plain/path" {
		t.Errorf("a plain path was quoted: %s", got)
	}
}

func TestPrintable(t *testing.T) {
	for s, want := range map[string]bool{
		"/home/jane doe/wt": true, "ünï": true, "": true,
		"a\nb": false, "a\rb": false, "a\x1b[2Jb": false, "a\x7fb": false, "a\u2028b": false, "a\x85b": false, "\xff": false,
	} {
		if got := shellquote.Printable(s); got != want {
			t.Errorf("Printable(%q) = %v, want %v", s, got, want)
		}
	}
}
