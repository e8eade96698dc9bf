package clikit_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/version"
)

// tree is a small program with the awkward texts man pages must survive.
func tree(out *bytes.Buffer) *cobra.Command {
	root := &cobra.Command{Use: "demo", Short: "A demo", SilenceErrors: true, SilenceUsage: true}
	root.SetOut(out)
	root.SetErr(out)
	run := func(*cobra.Command, []string) error { return nil }
	serve := &cobra.Command{
		Use:   "serve [--addr A]",
		Short: "Serve — with a dash-y name",
		Long: `serve listens on --addr. A path: C:\temp.
.this line starts with a dot
'and this one with a quote

  table-row   kept as it is
  other       → unicode`,
		Example: "  demo serve --addr 127.0.0.1:0",
		RunE:    run,
	}
	serve.Flags().String("addr", "127.0.0.1:7077", "listen `address`")
	serve.Flags().Duration("window", 30*time.Minute, "lease window")
	serve.Flags().Bool("insecure", false, "no tokens")
	serve.Flags().String("secret", "", "hidden flag")
	serve.Flags().MarkHidden("secret")
	group := &cobra.Command{Use: "group", Short: "A group"}
	group.AddCommand(&cobra.Command{Use: "leaf", Short: "A leaf", RunE: run})
	root.AddCommand(serve, group,
		&cobra.Command{Use: "hidden", Short: "hidden", Hidden: true, RunE: run},
		&cobra.Command{Use: "old", Short: "old", Deprecated: "use serve", RunE: run})
	clikit.Install(root)
	return root
}

func TestManPages(t *testing.T) {
	var out bytes.Buffer
	root := tree(&out)
	dir := t.TempDir()
	root.SetArgs([]string{"gen-man", dir})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var names []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := "demo-completion-bash.1 demo-completion-fish.1 demo-completion-powershell.1 demo-completion-zsh.1 demo-completion.1 demo-gen-man.1 demo-group-leaf.1 demo-group.1 demo-serve.1 demo-version.1 demo.1"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("pages:\n  %s\nwant\n  %s", got, want)
	}

	page, err := os.ReadFile(filepath.Join(dir, "demo-serve.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		".TH \"DEMO\\-SERVE\" 1 \"\" \"demo ",
		".SH NAME\ndemo\\-serve \\- Serve \\[u2014] with a dash\\-y name\n",
		".SH SYNOPSIS\n.B demo serve\n[\\-\\-addr A] [flags]\n",
		`A path: C:\etemp.`,
		"\n\\&.this line starts with a dot\n",
		"\n\\&'and this one with a quote\n",
		".nf\n  table\\-row   kept as it is\n  other       \\[u2192] unicode\n.fi\n",
		".TP\n\\fB\\-\\-addr\\fP \\fIaddress\\fP\nlisten address (default \"127.0.0.1:7077\")\n",
		".TP\n\\fB\\-\\-window\\fP \\fIduration\\fP\nlease window (default 30m0s)\n",
		".TP\n\\fB\\-\\-insecure\\fP\nno tokens\n",
		".TP\n\\fB\\-h\\fP, \\fB\\-\\-help\\fP\n",
		".SH EXAMPLES\n",
		".SH SEE ALSO\n.BR demo (1)\n",
	} {
		if !bytes.Contains(page, []byte(w)) {
			t.Errorf("demo-serve.1 lacks %q:\n%s", w, page)
		}
	}
	if bytes.Contains(page, []byte("secret")) {
		t.Errorf("the hidden flag is documented:\n%s", page)
	}
	rootPage, _ := os.ReadFile(filepath.Join(dir, "demo.1"))
	for _, w := range []string{".B demo\nCOMMAND [flags]\n", "\\fB\\-v\\fP, \\fB\\-\\-version\\fP", ".SH COMMANDS\n", ".BR demo\\-group (1),\n", "demo\\-gen\\-man"} {
		if !bytes.Contains(rootPage, []byte(w)) {
			t.Errorf("demo.1 lacks %q:\n%s", w, rootPage)
		}
	}
	for _, w := range []string{"hidden", "old", "demo\\-help"} {
		if bytes.Contains(rootPage, []byte(w)) {
			t.Errorf("demo.1 mentions %q:\n%s", w, rootPage)
		}
	}

	if groff, err := exec.LookPath("groff"); err == nil {
		for _, n := range names {
			msg, err := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z", filepath.Join(dir, n)).CombinedOutput()
			if err != nil || len(msg) > 0 {
				t.Errorf("groff on %s: %v\n%s", n, err, msg)
			}
		}
	}
}

// A release's pages carry its version and its commit's day, not the day
// they were generated.
func TestManPageHeader(t *testing.T) {
	var out bytes.Buffer
	root := tree(&out)
	info := version.Info{Program: "demo", Version: "v1.2.3", CommitTime: "2026-12-03T10:00:00Z", GoVersion: "go1.26.8"}
	page := clikit.ManPage(root, info)
	if want := ".TH \"DEMO\" 1 \"2026\\-12\\-03\" \"demo v1.2.3\" \"demo manual\"\n"; !bytes.Contains(page, []byte(want)) {
		t.Errorf("header is not %q:\n%s", want, page)
	}
}

func TestCompletionUnknownShell(t *testing.T) {
	var out bytes.Buffer
	root := tree(&out)
	root.SetArgs([]string{"completion", "tcsh"})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), `unknown command "tcsh"`) {
		t.Errorf("completion tcsh: %v", err)
	}
	out.Reset()
	root = tree(&out)
	root.SetArgs([]string{"completion", "fish"})
	if err := root.Execute(); err != nil || !strings.Contains(out.String(), "complete -c demo") {
		t.Errorf("completion fish: %v\n%s", err, out.String())
	}
}
