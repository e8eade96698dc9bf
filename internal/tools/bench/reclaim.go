package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// ReclaimResult is how long a crashed agent's ticket stays taken: from
// the agent's SIGKILL to the ticket open again, over Kills crashes, with
// warp serving --release-on-exit and the loops at their default tick.
type ReclaimResult struct {
	Kills    int     `json:"kills"`
	P50Ms    float64 `json:"p50_ms"`
	P99Ms    float64 `json:"p99_ms"`
	MaxMs    float64 `json:"max_ms"`
	Interval string  `json:"loop_interval"`
}

// RunReclaim measures ReclaimResult with the real gyrum at path gyrum:
// for each of kills tickets, start-work watches a fresh `sleep` (its
// agent), the loop sends its first heartbeat, the agent is killed, and
// the ticket is read until it is open. The loops keep gyrum's default
// interval (240 s): what frees the ticket is the loop's wait on the
// agent's exit, not a tick.
func RunReclaim(ctx context.Context, gyrum string, kills int) (ReclaimResult, error) {
	root, err := os.MkdirTemp("", "warpbench-reclaim-")
	if err != nil {
		return ReclaimResult{}, err
	}
	defer os.RemoveAll(root)
	ws, err := startWarp(ctx, root, warp.Config{ReleaseOnExit: true}, 0, 1, false, nil)
	if err != nil {
		return ReclaimResult{}, err
	}
	defer ws.close()
	took := make([]time.Duration, 0, kills)
	for i := range kills {
		d, err := reclaimOnce(ctx, ws, gyrum, root, fmt.Sprintf("R-%d", i))
		if err != nil {
			return ReclaimResult{}, err
		}
		took = append(took, d)
	}
	slices.Sort(took)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return ReclaimResult{Kills: kills, P50Ms: ms(took[len(took)/2]), P99Ms: ms(took[(len(took)*99)/100]),
		MaxMs: ms(took[len(took)-1]), Interval: "240s (default)"}, nil
}

// reclaimOnce claims ticket for a fresh agent, kills the agent, and
// returns how long the ticket took to open again.
func reclaimOnce(ctx context.Context, ws *warpServer, gyrum, root, ticket string) (time.Duration, error) {
	if _, err := ws.svc.CreateTicket(ctx, warp.NewTicket{ID: ticket, Title: "reclaim"}); err != nil {
		return 0, err
	}
	wt := filepath.Join(root, ticket)
	if err := mkdir(wt); err != nil {
		return 0, err
	}
	agent := exec.Command("sleep", "1000000")
	if err := agent.Start(); err != nil {
		return 0, fmt.Errorf("bench: %w", err)
	}
	defer func() { _ = agent.Process.Kill(); _ = agent.Wait() }()
	sw := exec.CommandContext(ctx, gyrum, "start-work", ticket, "--dir", wt, "--watch-pid", strconv.Itoa(agent.Process.Pid))
	sw.Env = append(os.Environ(), "WARP_URL="+ws.url(), "GYRUM_HOME="+filepath.Join(root, "home"))
	if out, err := sw.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("bench: gyrum start-work: %w: %s", err, strings.TrimSpace(string(out)))
	}
	// The loop is up once its first heartbeat is in.
	if err := pollUntil(ctx, 10*time.Second, func() bool {
		v, err := ws.svc.Ticket(ctx, ticket)
		return err == nil && v.Lease != nil && !v.Lease.FirstV2At.IsZero()
	}); err != nil {
		return 0, fmt.Errorf("bench: %s: no first heartbeat: %w", ticket, err)
	}
	start := time.Now()
	if err := agent.Process.Signal(syscall.SIGKILL); err != nil {
		return 0, err
	}
	if err := pollUntil(ctx, 30*time.Second, func() bool {
		v, err := ws.svc.Ticket(ctx, ticket)
		return err == nil && v.Ticket.State == warp.TicketOpen
	}); err != nil {
		return 0, fmt.Errorf("bench: %s: not open again after the agent's kill: %w", ticket, err)
	}
	return time.Since(start), nil
}

// pollUntil calls cond every millisecond until it holds, for at most limit.
func pollUntil(ctx context.Context, limit time.Duration, cond func() bool) error {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}
