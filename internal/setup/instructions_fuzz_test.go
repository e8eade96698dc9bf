package setup

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// FuzzInstructions: any file either is refused with a MarkerError (and
// then uninstall refuses it too), or gets exactly one current block,
// installs idempotently, and uninstalls to a file without it — the
// original bytes when it had no block and ended in a newline.
func FuzzInstructions(f *testing.F) {
	for _, s := range []string{"", "\n", "# x\n", "# x", "a\r\nb\r\n", "<!-- gyrum:begin -->\nold\n<!-- gyrum:end -->\n",
		"x\n<!-- gyrum:begin -->\n", "<!-- gyrum:end -->\n", " <!-- gyrum:begin x -->\r\n<!-- gyrum:end -->"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, _, err := installInstructions("F.md", data)
		if err != nil {
			var me *MarkerError
			if !errors.As(err, &me) {
				t.Fatalf("install error %T %v is not a MarkerError", err, err)
			}
			if _, _, err := uninstallInstructions("F.md", data); err == nil {
				t.Fatalf("uninstall accepts what install refused: %q", data)
			}
			return
		}
		if n := strings.Count(string(out), InstructionsBegin); n != 1 {
			t.Fatalf("%d blocks after install of %q", n, data)
		}
		again, changed, err := installInstructions("F.md", out)
		if err != nil || changed || !bytes.Equal(again, out) {
			t.Fatalf("second install of %q: changed %v, err %v", data, changed, err)
		}
		back, changed, err := uninstallInstructions("F.md", out)
		if err != nil || !changed {
			t.Fatalf("uninstall: changed %v, err %v", changed, err)
		}
		if bytes.Contains(back, []byte(InstructionsBegin)) {
			t.Fatalf("uninstall left the block: %q", back)
		}
		_, _, hadBlock, _ := findBlock("F.md", data)
		if !hadBlock && (len(data) == 0 || data[len(data)-1] == '\n') && !bytes.Equal(back, data) {
			t.Fatalf("install + uninstall of %q gave %q", data, back)
		}
	})
}
