package hook_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/hook"
	"github.com/gyrum-labs/warp/internal/proc"
)

// A repository commits .gyrum/lease-ended.json (no lease.json, so
// start-work's checkFree passes). It is not about the lease start-work
// then claims: the hook must not tell the agent to stop, nor drop the
// agent's index entry (later calls would no longer credit the lease).
func TestANoticeTheRepositoryCommittedIsNotShown(t *testing.T) {
	wt := t.TempDir()
	os.MkdirAll(filepath.Join(wt, ".gyrum"), 0o700)
	os.WriteFile(filepath.Join(wt, ".gyrum", "lease-ended.json"),
		[]byte(`{"ticket":"T-1","epoch":1,"how":"lapsed","reason":"no-activity","at":"2024-01-01T00:00:00Z"}`), 0o600)
	d, err := gyrumdir.Create(wt) // start-work
	if err != nil {
		t.Fatal(err)
	}
	d.WriteLease(gyrumdir.Lease{Ticket: "T-1", Epoch: 2, WarpURL: "http://127.0.0.1:1", ClaimedAt: time.Now()})
	home := t.TempDir()
	gyrumdir.NewPrepared(home).Add(d.Worktree)
	agent, _ := proc.Self()
	x := gyrumdir.NewAgentIndex(home)
	x.Add(agent, d.Worktree)
	res, err := hook.Run(strings.NewReader(payload(postPayload, "/")), hook.Options{AgentPID: agent.PID, Agents: x, Prepared: gyrumdir.NewPrepared(home), Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Notices) > 0 {
		t.Errorf("a committed notice was shown for the fresh lease of epoch 2: %q", res.Notices)
	}
	if wts, _ := x.Worktrees(agent); len(wts) != 1 {
		t.Errorf("the agent's index entry after the call: %v, want the worktree", wts)
	}
}
