package heartbeat_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/heartbeat"
	"github.com/gyrum-labs/warp/internal/hook"
	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/warp"
)

// runHook runs the real hook on d as Claude Code would after a tool call.
func runHook(t *testing.T, d gyrumdir.Dir, event, id string) {
	t.Helper()
	in := `{"cwd":"` + d.Worktree + `","hook_event_name":"` + event + `","tool_name":"Bash","tool_use_id":"` + id + `"}`
	if _, err := hook.Run(strings.NewReader(in), hook.Options{Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

// sumEvents adds hook_events over the heartbeats the server answered 200.
func sumEvents(bs []client.HeartbeatRequest) int64 {
	var n int64
	for _, b := range bs {
		n += b.HookEvents
	}
	return n
}

func okBodies(ws *warpServer) []client.HeartbeatRequest {
	var out []client.HeartbeatRequest
	for _, b := range ws.Answered() {
		if b.Status == http.StatusOK {
			out = append(out, b.Body)
		}
	}
	return out
}

func TestReportsHookSeenAndEvents(t *testing.T) {
	ws := newWarp(t)
	_, parent := watched(t)
	d := worktree(t, ws, "T-hook", ws.Claim("T-hook", "A"), parent)
	// A hook record from before the loop starts (start-work's touch, a
	// previous loop's hook) does not count.
	d.WriteActivity(gyrumdir.ActivityRecord{Source: gyrumdir.SourceHook, At: time.Now().Add(-time.Second)})
	d.CountHookEvent()
	r := startLoop(t, d, func(c *heartbeat.Config) { c.Durations.Staleness = 30 * time.Second })
	waitFor(t, "three heartbeats", func() bool { return len(ws.Answered()) >= 3 })
	for i, b := range ws.Answered() {
		if b.Body.HookSeen == nil || *b.Body.HookSeen || b.Body.HookEvents != 0 {
			t.Fatalf("heartbeat %d before any hook run: hook_seen %v hook_events %d, want false and 0", i, b.Body.HookSeen, b.Body.HookEvents)
		}
	}
	if l := ws.Lease("T-hook"); l.HookSeen != warp.HookNo {
		t.Fatalf("server hook_seen %q, want %q", l.HookSeen, warp.HookNo)
	}
	runHook(t, d, hook.EventPreToolUse, "toolu_1")
	runHook(t, d, hook.EventPostToolUse, "toolu_1")
	runHook(t, d, hook.EventPostToolUse, "toolu_2")
	waitFor(t, "hook_seen true", func() bool {
		bs := okBodies(ws)
		return *bs[len(bs)-1].HookSeen
	})
	n := len(okBodies(ws))
	waitFor(t, "two more heartbeats", func() bool { return len(okBodies(ws)) >= n+2 })
	if got := sumEvents(okBodies(ws)); got != 3 {
		t.Errorf("hook_events summed over heartbeats: got %d, want 3", got)
	}
	bs := okBodies(ws)
	seenFrom := -1
	for i, b := range bs {
		if *b.HookSeen && seenFrom < 0 {
			seenFrom = i
		}
		if seenFrom >= 0 && !*b.HookSeen {
			t.Errorf("heartbeat %d: hook_seen went back to false", i)
		}
	}
	if l := ws.Lease("T-hook"); l.HookSeen != warp.HookYes || l.HookEvents != 3 {
		t.Errorf("server lease: hook_seen %q hook_events %d, want yes and 3", l.HookSeen, l.HookEvents)
	}
	if st := r.state(); !st.HookSeen || st.HookEvents != 3 {
		t.Errorf("heartbeat.state: hook_seen %v hook_events %d, want true and 3", st.HookSeen, st.HookEvents)
	}
}

func TestOlderHookTouchCountsAsSeen(t *testing.T) {
	ws := newWarp(t)
	_, parent := watched(t)
	d := worktree(t, ws, "T-oldhook", ws.Claim("T-oldhook", "A"), parent)
	startLoop(t, d, func(c *heartbeat.Config) { c.Durations.Staleness = 30 * time.Second })
	waitFor(t, "a heartbeat", func() bool { return len(okBodies(ws)) >= 1 })
	d.TouchActivity(time.Now()) // an older gyrum's hook: mtime only, no record, no count
	waitFor(t, "hook_seen true", func() bool {
		bs := okBodies(ws)
		return *bs[len(bs)-1].HookSeen
	})
	if got := sumEvents(okBodies(ws)); got != 0 {
		t.Errorf("hook_events: got %d, want 0 (an older hook does not count)", got)
	}
}

func TestHookEventsOfAFailedPOSTAreSentAgain(t *testing.T) {
	ws := newWarp(t)
	_, parent := watched(t)
	d := worktree(t, ws, "T-retry", ws.Claim("T-retry", "A"), parent)
	var mu sync.Mutex
	failing := false
	ws.SetAnswer(func(b client.HeartbeatRequest, w http.ResponseWriter) bool {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	r := startLoop(t, d, func(c *heartbeat.Config) { c.Durations.Staleness = 30 * time.Second })
	waitFor(t, "a heartbeat", func() bool { return len(okBodies(ws)) >= 1 })
	mu.Lock()
	failing = true
	mu.Unlock()
	runHook(t, d, hook.EventPostToolUse, "toolu_1")
	runHook(t, d, hook.EventPostToolUse, "toolu_2")
	waitFor(t, "two failed POSTs", func() bool { return r.state().Failures >= 2 })
	failed := 0
	for _, b := range ws.Answered() {
		if b.Status == http.StatusServiceUnavailable && b.Body.HookEvents == 2 {
			failed++
		}
	}
	if failed < 2 {
		t.Errorf("failed POSTs carrying both events: %d, want each retry to carry them", failed)
	}
	mu.Lock()
	failing = false
	mu.Unlock()
	waitFor(t, "heartbeats to resume", func() bool {
		bs := ws.Answered()
		return bs[len(bs)-1].Status == http.StatusOK && sumEvents(okBodies(ws)) > 0
	})
	n := len(okBodies(ws))
	waitFor(t, "one more heartbeat", func() bool { return len(okBodies(ws)) > n })
	if got := sumEvents(okBodies(ws)); got != 2 {
		t.Errorf("hook_events acknowledged: got %d, want 2 (counted once)", got)
	}
	if l := ws.Lease("T-retry"); l.HookEvents != 2 {
		t.Errorf("server hook_events %d, want 2", l.HookEvents)
	}
}

// preIssueHeartbeat is the heartbeat body as servers before hook health
// decoded it: no hook fields, unknown ones ignored (DESIGN.md: "Unknown
// fields are ignored so newer loops can add optional ones").
type preIssueHeartbeat struct {
	SchemaVersion *int     `json:"schema_version"`
	Ticket        string   `json:"ticket"`
	Epoch         int64    `json:"epoch"`
	ActivityAgeS  *float64 `json:"activity_age_s"`
}

func TestOlderServerAcceptsHookFields(t *testing.T) {
	var mu sync.Mutex
	var raw []string
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		var b preIssueHeartbeat
		if err := json.Unmarshal(data, &b); err != nil || b.SchemaVersion == nil || *b.SchemaVersion != 2 || b.ActivityAgeS == nil {
			http.Error(w, `{"error":{"code":"invalid","message":"bad body"}}`, http.StatusBadRequest)
			return
		}
		mu.Lock()
		raw = append(raw, string(data))
		mu.Unlock()
		json.NewEncoder(w).Encode(client.HeartbeatResponse{Ticket: b.Ticket, Epoch: b.Epoch,
			ExpiresAt: time.Now().Add(time.Hour), Verdict: "active", Mode: "transition", Extended: true})
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	_, parent := watched(t)
	d, err := gyrumdir.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d.WriteLease(gyrumdir.Lease{Ticket: "T-1", Epoch: 1, WarpURL: "http://" + ln.Addr().String(), Agent: "A", Host: "h", ClaimedAt: time.Now()})
	d.WritePID(gyrumdir.ParentPIDFile, parent)
	d.TouchActivity(time.Now())
	r := startLoop(t, d, func(c *heartbeat.Config) { c.Durations.Staleness = 30 * time.Second })
	waitFor(t, "three accepted heartbeats", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(raw) >= 3
	})
	if st := r.state(); st.Failures != 0 || r.exited() != "" {
		t.Fatalf("loop against an older server: %+v, exit %q", st, r.exited())
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(raw[0], `"hook_seen":false`) {
		t.Errorf("body %s: want hook_seen in it", raw[0])
	}
}

// TestDecodeHeartbeatIgnoresUnknownFields: the server side of the same
// promise — a loop newer than this server may add fields.
func TestDecodeHeartbeatIgnoresUnknownFields(t *testing.T) {
	h, err := httpapi.DecodeHeartbeat(strings.NewReader(
		`{"schema_version":2,"ticket":"T-1","epoch":1,"activity_age_s":1,"hook_seen":true,"hook_events":4,"hook_latency_ms":3,"future":{"x":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if h.HookSeen == nil || !*h.HookSeen || h.HookEvents != 4 {
		t.Errorf("decoded hook fields: %v %d, want true 4", h.HookSeen, h.HookEvents)
	}
	h, err = httpapi.DecodeHeartbeat(strings.NewReader(`{"schema_version":2,"ticket":"T-1","epoch":1,"activity_age_s":1}`))
	if err != nil || h.HookSeen != nil || h.HookEvents != 0 {
		t.Errorf("without hook fields: %v %d %v, want unknown", h.HookSeen, h.HookEvents, err)
	}
}
