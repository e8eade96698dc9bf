package heartbeat_test

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/heartbeat"
)

// A proxy in front of warp answering with its own page (a bad deploy's
// 404, a 409 or 410 from another service at the URL) is not warp saying
// the lease ended: the loop retries, tells the agent nothing, and goes on
// once warp answers again. warp's own 404 still ends it (TestLeaseGone...).
func TestAProxysErrorPageDoesNotEndTheLoop(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusConflict, http.StatusGone} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			ws := newWarp(t)
			_, parent := watched(t)
			d := worktree(t, ws, "T-px", ws.Claim("T-px", "A"), parent)
			ws.SetAnswer(func(b client.HeartbeatRequest, w http.ResponseWriter) bool {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(status)
				w.Write([]byte("<html><body><h1>nginx</h1></body></html>"))
				return true
			})
			r := startLoop(t, d, nil)
			waitFor(t, "three answers from the proxy", func() bool { return ws.Count() >= 3 })
			ws.SetAnswer(nil)
			n := ws.Count()
			waitFor(t, "a heartbeat warp answers", func() bool {
				bs := ws.Answered()
				return len(bs) > n && bs[len(bs)-1].Status == 200
			})
			if _, err := d.ReadNotice(); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the agent was told its lease ended: %v", err)
			}
			if st := r.state(); st.LastOutcome == "not-found" || st.LastOutcome == "lease-ended" || st.LastOutcome == "stale-epoch" {
				t.Errorf("state %+v", st)
			}
		})
	}
}

// The server stops speaking v2 (an older warp rolled back to) while the
// agent is idle: the fallback must not answer the stale tick with a v1
// body, which cannot say stale and would extend the lease.
func TestFallbackToV1SkipsAStaleTick(t *testing.T) {
	ws := newWarp(t)
	_, parent := watched(t)
	d := worktree(t, ws, "T-fb", ws.Claim("T-fb", "A"), parent)
	if err := d.TouchActivity(time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	startLoop(t, d, nil)
	waitFor(t, "a stale report", func() bool {
		bs := ws.Answered()
		return len(bs) > 0 && bs[len(bs)-1].Body.Stale
	})
	n := ws.Count()
	speakV1Only(ws)
	waitFor(t, "the rejected v2 and two more ticks", func() bool { return ws.Count() >= n+1 })
	time.Sleep(3 * scaled.Interval)
	for _, b := range ws.Beats()[n:] {
		if b.Body.SchemaVersion == nil {
			t.Fatalf("a v1 body (which extends the lease) went out for an idle agent: %+v", b)
		}
	}
}

// fixedGap is a warp that answers every heartbeat with the max_retry_gap_s
// it is given.
type fixedGap float64

func (g fixedGap) Heartbeat(context.Context, client.HeartbeatRequest) (client.HeartbeatResponse, error) {
	return client.HeartbeatResponse{MaxRetryGapS: float64(g), Extended: true}, nil
}
func (fixedGap) Ticket(context.Context, string) (client.Ticket, error) { return client.Ticket{}, nil }
func (fixedGap) LeaseStatus(context.Context, string, int64) (client.LeaseStatus, error) {
	return client.LeaseStatus{}, nil
}

// A server's max_retry_gap_s caps the wait between attempts, down to a
// floor: a startup grace of a millisecond (or a hostile answer) must not
// turn every loop of a fleet into a tight loop.
func TestRetryGapHasAFloor(t *testing.T) {
	ws := newWarp(t)
	_, parent := watched(t)
	d := worktree(t, ws, "T-gap", ws.Claim("T-gap", "A"), parent)
	for _, c := range []struct {
		gap      float64
		interval time.Duration
		want     time.Duration
	}{
		{0.0005, 240 * time.Second, heartbeat.MinRetryGap},
		{30, 240 * time.Second, 30 * time.Second},
		{0.0005, 200 * time.Millisecond, 200 * time.Millisecond}, // the interval, when shorter
	} {
		l, err := heartbeat.New(heartbeat.Config{Dir: d, Registry: gyrumdir.NewRegistry(t.TempDir()),
			Durations: heartbeat.Durations{Interval: c.interval, Staleness: time.Hour, InFlightMax: time.Hour}, API: fixedGap(c.gap)})
		if err != nil {
			t.Fatal(err)
		}
		l.Tick(context.Background())
		if got := l.Delay(); got < c.want*9/10 || got > c.want {
			t.Errorf("max_retry_gap_s %v, interval %v: delay %v, want %v", c.gap, c.interval, got, c.want)
		}
	}
}

// speakV1Only makes ws an old server: it rejects schema_version 2 the way
// warp does an unknown version, and lets v1 bodies through.
func speakV1Only(ws *warpServer) {
	ws.SetAnswer(func(b client.HeartbeatRequest, w http.ResponseWriter) bool {
		if b.SchemaVersion == nil {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":{"code":"unsupported_schema_version","message":"schema_version 2 is not supported"}}`))
		return true
	})
}

// EndOfLease reads warp's answer about one lease: held is not ended;
// released and completed keep their reason; a lapse followed by another
// claim is a take-over.
func TestEndOfLease(t *testing.T) {
	l := gyrumdir.Lease{Ticket: "T-1", Epoch: 3}
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		state  string
		cur    int64
		reason string
		ended  bool
		how    string
	}{
		{client.LeaseHeld, 3, "", false, ""},
		{client.LeaseReleased, 3, "operator", true, gyrumdir.EndReleased},
		{client.LeaseReleased, 4, "operator", true, gyrumdir.EndReleased},
		{client.LeaseCompleted, 3, "", true, gyrumdir.EndCompleted},
		{client.LeaseLapsed, 3, "expired", true, gyrumdir.EndLapsed},
		{client.LeaseLapsed, 5, "expired", true, gyrumdir.EndTakenOver},
	} {
		st := client.LeaseStatus{Ticket: "T-1", CurrentEpoch: c.cur, Lease: client.Lease{Epoch: 3, State: c.state, EndReason: c.reason}}
		n, ended := heartbeat.EndOfLease(st, l, at)
		if ended != c.ended || n.How != c.how || ended && (n.Reason != c.reason || n.Ticket != "T-1" || n.Epoch != 3 || !n.At.Equal(at)) {
			t.Errorf("%s, current epoch %d: got %+v ended %v, want how %q ended %v", c.state, c.cur, n, ended, c.how, c.ended)
		}
	}
}
