package heartbeat_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/heartbeat"
)

// writeTranscript writes a Claude Code session transcript in which the
// call id was started (tool_use) and, when finished, ended (tool_result).
func writeTranscript(t *testing.T, id string, finished bool) string {
	t.Helper()
	lines := fmt.Sprintf(`{"type":"assistant","message":{"content":[{"type":"tool_use","id":%q,"name":"Bash","input":{"command":"npm test"}}]}}`+"\n", id)
	if finished {
		lines += fmt.Sprintf(`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":%q,"content":"done"}]}}`+"\n", id)
	}
	p := filepath.Join(t.TempDir(), "session.jsonl")
	if err := os.WriteFile(p, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Issue 44: a shell call the transcript shows unfinished, with no process
// backing it (claude-code #63100: Bash "Waiting…" for two hours with
// nothing running), counts as in flight only until it has been unbacked
// for HungAfter; then only its start counts and the loop sends stale
// reports. An unfinished MCP call keeps today's rule: in flight.
func TestHungShellCallGoesStale(t *testing.T) {
	for _, tc := range []struct {
		tool      string
		wantStale bool
	}{{"Bash", true}, {"mcp__ci__wait", false}} {
		t.Run(tc.tool, func(t *testing.T) {
			ws := newWarp(t)
			_, parent := watched(t) // a process without children: nothing backs the call
			d := worktree(t, ws, "T-hung", ws.Claim("T-hung", "A"), parent)
			d.TouchActivity(time.Now().Add(-time.Hour))
			if err := d.RecordTranscript(writeTranscript(t, "toolu_hung", false)); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if err := d.StartInFlight("toolu_hung", tc.tool, start); err != nil {
				t.Fatal(err)
			}
			startLoop(t, d, func(c *heartbeat.Config) {
				c.Durations.InFlightMax = time.Hour
				c.Durations.HungAfter = 300 * time.Millisecond
			})
			waitFor(t, "the call reported in flight", func() bool {
				bs := ws.Answered()
				return len(bs) > 0 && bs[len(bs)-1].Body.InFlight == tc.tool
			})
			if !tc.wantStale {
				// A heartbeat well past HungAfter and the staleness limit:
				// still in flight.
				late := start.Add(scaled.Staleness + 300*time.Millisecond)
				waitFor(t, "a heartbeat past the staleness limit", func() bool {
					bs := ws.Answered()
					return len(bs) > 0 && bs[len(bs)-1].At.After(late)
				})
				for _, b := range ws.Answered() {
					if b.Body.Stale || b.Body.InFlight != tc.tool {
						t.Fatalf("an unfinished MCP call: heartbeat %+v, want in flight", b.Body)
					}
				}
				return
			}
			waitFor(t, "stale reports", func() bool {
				bs := ws.Answered()
				return len(bs) > 0 && bs[len(bs)-1].Body.Stale
			})
			bs := ws.Answered()
			if got := *bs[len(bs)-1].Body.ActivityAgeS; got < bs[len(bs)-1].At.Sub(start).Seconds()-0.05 {
				t.Errorf("activity age %.3fs: want the hung call's start (%.3fs ago)", got, bs[len(bs)-1].At.Sub(start).Seconds())
			}
		})
	}
}
