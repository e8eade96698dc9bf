package gyrumcli_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/clikit/clikittest"
	"github.com/gyrum-labs/warp/internal/gyrumcli"
)

// gyrumRun runs the gyrum command tree in-process.
func gyrumRun(t *testing.T) clikittest.Run {
	return func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		app := &gyrumcli.App{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
			Getenv: func(string) string { return "" }, Executable: gyrumBin}
		code := app.Run(context.Background(), args)
		return out.String(), errb.String(), code
	}
}

func TestVersion(t *testing.T) {
	clikittest.CheckVersion(t, "gyrum", gyrumRun(t))
}

func TestCompletion(t *testing.T) {
	clikittest.CheckCompletion(t, "gyrum", gyrumRun(t))
}

// The bash script completes with the real binary: "gyrum se<TAB>" offers
// setup. bash-completion's _get_comp_words_by_ref is stubbed, so the test
// needs bash alone.
func TestBashCompletionRunsTheBinary(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	bin := t.TempDir()
	if err := os.Symlink(gyrumBin, filepath.Join(bin, "gyrum")); err != nil {
		t.Fatal(err)
	}
	script := `
_get_comp_words_by_ref() { cur="${COMP_WORDS[COMP_CWORD]}"; prev="${COMP_WORDS[COMP_CWORD-1]}"; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
source <(gyrum completion bash)
COMP_WORDS=(gyrum "$1"); COMP_CWORD=1; COMP_LINE="gyrum $1"; COMP_POINT=${#COMP_LINE}
__start_gyrum 2>/dev/null
printf '%s\n' "${COMPREPLY[@]}"`
	for word, want := range map[string]string{"se": "setup\n", "touch-": "touch-activity\n", "heart": "heartbeat\n"} {
		cmd := exec.Command(bash, "-c", script, "bash", word)
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.Output()
		if err != nil || string(out) != want {
			t.Errorf("gyrum %s<TAB>: %q, %v; want %q", word, out, err, want)
		}
	}
}

func TestGenMan(t *testing.T) {
	clikittest.CheckManPages(t, "gyrum", gyrumRun(t))
}

// The hook's fast path builds no command tree and stays silent: the new
// root flags and commands did not change it.
func TestTouchActivityFastPathUnchanged(t *testing.T) {
	out, errOut, code := gyrumRun(t)("touch-activity", "--version")
	if code != 0 || out != "" || errOut != "" {
		t.Errorf("touch-activity --version: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
