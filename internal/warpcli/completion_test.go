package warpcli_test

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
)

// complete runs cobra's hidden __complete command as a shell's TAB does and
// returns the offered words (without descriptions) and the directive line.
func complete(t *testing.T, env map[string]string, args ...string) (words []string, directive string, r result) {
	t.Helper()
	r = runCLI(t, env, time.Now, append([]string{"__complete"}, args...)...)
	if r.code != 0 {
		t.Fatalf("__complete %q: exit %d, stderr %q", args, r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	directive = lines[len(lines)-1]
	for _, l := range lines[:len(lines)-1] {
		w, _, _ := strings.Cut(l, "\t")
		words = append(words, w)
	}
	return words, directive, r
}

// noFiles is cobra's ShellCompDirectiveNoFileComp: never offer file names.
const noFiles = ":4"

// Completion reads ticket ids, labels and hosts from the server, and
// offers the fixed values of --state, --verdict, -o and mode set.
func TestCompletionFromTheServer(t *testing.T) {
	s := startServer(t, nil)
	ctx := context.Background()
	admin := s.Client(adminToken)
	for _, tk := range []client.CreateTicketRequest{
		{ID: "T-1", Title: "fix the\tflaky test", Labels: []string{"backend", "db"}},
		{ID: "T-2", Labels: []string{"frontend"}},
		{ID: "X-3"},
	} {
		if _, err := admin.CreateTicket(ctx, tk); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Client(agentToken).Claim(ctx, "T-2", client.ClaimRequest{Agent: "a", Host: "build-7"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"WARP_URL": s.URL(), "WARP_TOKEN": adminToken}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"ticket", "show", ""}, []string{"T-1", "T-2", "X-3"}},
		{[]string{"ticket", "show", "T-"}, []string{"T-1", "T-2"}},
		{[]string{"ticket", "show", "T-1", ""}, nil}, // one id only
		{[]string{"release", ""}, []string{"T-2"}},   // claimed tickets only
		{[]string{"ticket", "complete", ""}, []string{"T-2"}},
		{[]string{"ticket", "create", "T-9", "--label", ""}, []string{"backend", "db", "frontend"}},
		{[]string{"ticket", "create", "--label", "f"}, []string{"frontend"}},
		{[]string{"ticket", "list", "--host", ""}, []string{"build-7"}},
		{[]string{"ticket", "list", "--state", ""}, []string{"open", "claimed", "completed", "cancelled", "blocked"}},
		// Fixed values come whole: the shell filters them by what was typed.
		{[]string{"ticket", "list", "--verdict", "s"}, []string{"active", "looping", "spinning", "stalled", "unwired", "silent", "exited"}},
		{[]string{"ticket", "list", "-o", ""}, []string{"text", "json"}},
		{[]string{"mode", "set", ""}, []string{"legacy", "transition", "activity"}},
	} {
		words, directive, _ := complete(t, env, c.args...)
		if !slices.Equal(words, c.want) || directive != noFiles {
			t.Errorf("complete %q: got %q %s, want %q %s", c.args, words, directive, c.want, noFiles)
		}
	}
	// The title rides along as the description, on one line.
	_, _, r := complete(t, env, "ticket", "show", "T-1")
	if !strings.Contains(r.stdout, "T-1\tfix the flaky test\n") {
		t.Errorf("ticket show T-1<TAB>: %q, want the title as the description", r.stdout)
	}
	// --url on the command line is the server asked.
	words, _, _ := complete(t, map[string]string{"WARP_TOKEN": adminToken}, "ticket", "show", "--url", s.URL(), "X")
	if !slices.Equal(words, []string{"X-3"}) {
		t.Errorf("with --url: got %q, want [X-3]", words)
	}
}

// A server that is down, refuses the token, or does not answer within the
// completion's second (warpcli.CompletionTimeout: without it the last case
// would hang) offers nothing, says nothing, and never falls back to file
// names.
func TestCompletionFallsBackSilently(t *testing.T) {
	s := startServer(t, nil)
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	go func() {
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	for name, env := range map[string]map[string]string{
		"dead URL":      {"WARP_URL": "http://127.0.0.1:1", "WARP_TOKEN": adminToken},
		"agent token":   {"WARP_URL": s.URL(), "WARP_TOKEN": agentToken},
		"no token":      {"WARP_URL": s.URL()},
		"bad URL":       {"WARP_URL": "not a url"},
		"never answers": {"WARP_URL": "http://" + hang.Addr().String(), "WARP_TOKEN": adminToken},
	} {
		for _, args := range [][]string{{"ticket", "show", ""}, {"release", ""}, {"ticket", "list", "--host", ""}, {"ticket", "create", "--label", ""}} {
			words, directive, r := complete(t, env, args...)
			if len(words) != 0 || directive != noFiles {
				t.Errorf("%s: complete %q: got %q %s, want nothing and %s", name, args, words, directive, noFiles)
			}
			if strings.Contains(r.stderr, "warp:") || strings.Contains(strings.ToLower(r.stderr), "error") {
				t.Errorf("%s: complete %q printed an error: %q", name, args, r.stderr)
			}
		}
	}
}
