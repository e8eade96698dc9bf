package geminitest_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/claudetest"
	"github.com/gyrum-labs/warp/internal/geminitest"
)

// The fake drives the real CLI through a shell call and a final answer:
// the call runs in the project under the relaunched node child (the
// launcher stays its parent), its result comes back on the call's id, the
// CLI prints the answer and exits 0, and nothing it started is left.
// Besides the conversation the CLI sends only generateContent (the router's
// classifier).
func TestShellCallAndExit(t *testing.T) {
	geminitest.Require(t)
	dir := t.TempDir()
	mark := filepath.Join(t.TempDir(), "ran")
	call := geminitest.Shell("echo $PPID > " + mark + "; pwd")
	model := geminitest.NewFakeModel(t, geminitest.Calls(call), geminitest.Text("All done."))
	s := geminitest.Start(t, model, geminitest.Options{Dir: dir})
	claudetest.Poll(t, 30*time.Second, "the shell call to run", func() bool { _, err := os.Stat(mark); return err == nil })
	agent := s.AgentPid()
	if agent == 0 {
		t.Fatalf("no relaunched agent child under the launcher:\n%s", s.TreeString())
	}
	s.WaitOK(30 * time.Second)

	if got := strings.TrimSpace(s.Stdout()); got != "All done." {
		t.Errorf("stdout %q, want the final answer", got)
	}
	res, n, ok := model.Result(call)
	if !ok || n != 2 || !strings.Contains(res.Output(), dir) {
		t.Errorf("result %+v in request %d (found %v), want the project's path in request 2", res, n, ok)
	}
	// The tool's bash is a child of the relaunched agent.
	data, _ := os.ReadFile(mark)
	if got := strings.TrimSpace(string(data)); got != strconv.Itoa(agent) {
		t.Errorf("the shell call's parent is %s, want the agent child %d", got, agent)
	}
	kinds := map[geminitest.Kind]int{}
	for _, r := range model.Requests() {
		kinds[r.Kind]++
	}
	if kinds[geminitest.KindMain] != 2 || kinds[geminitest.KindOther] != 0 {
		t.Errorf("requests by kind %v, want 2 main and nothing unknown:\n%s", kinds, model.Summary())
	}
	if left := s.Leftovers(); len(left) > 0 {
		t.Errorf("processes left after exit: %v", left)
	}
}
