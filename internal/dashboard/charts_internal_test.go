package dashboard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/warp"
)

func TestRingKeepsTheLastDayPerMinute(t *testing.T) {
	var r ring
	t0 := time.Date(2026, 5, 6, 12, 0, 30, 0, time.UTC)
	r.add(t0, 2*time.Millisecond)
	r.add(t0.Add(10*time.Second), 4*time.Millisecond) // same minute
	r.add(t0.Add(2*time.Minute), time.Millisecond)
	got := r.since(t0.Add(3 * time.Minute))
	if len(got) != 2 || got[0].N != 2 || got[0].Mean() != 3*time.Millisecond || got[0].Max != 4*time.Millisecond ||
		got[1].Minute != got[0].Minute+2 {
		t.Fatalf("slots: %+v", got)
	}
	// A day later the first minute has left the window; its slot is
	// reused by the same minute of the next day, not added to.
	day := t0.Add(RingWindow)
	if got := r.since(day); len(got) != 1 || got[0].Minute != t0.Add(2*time.Minute).Unix()/60 {
		t.Fatalf("a day later: %+v, want only the 12:02 minute", got)
	}
	r.add(day, 7*time.Millisecond)
	got = r.since(day)
	if len(got) != 2 || got[1].N != 1 || got[1].Max != 7*time.Millisecond {
		t.Fatalf("after reuse: %+v", got)
	}
}

func TestScaleTicks(t *testing.T) {
	for _, c := range []struct {
		v         float64
		whole     bool
		top, step float64
	}{{0, true, 1, 1}, {1, true, 1, 1}, {4, true, 4, 1}, {5, true, 6, 2}, {33, true, 40, 10}, {4.2, false, 6, 2}, {0.7, false, 0.8, 0.2}} {
		top, step := scale(c.v, c.whole)
		if top != c.top || step != c.step {
			t.Errorf("scale(%v, %v) = %v, %v; want %v, %v", c.v, c.whole, top, step, c.top, c.step)
		}
	}
}

func TestLineChartBreaksAtGaps(t *testing.T) {
	now := time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)
	m := now.Unix() / 60
	slots := []ringSlot{{Minute: m - 10, N: 1, Sum: time.Millisecond, Max: time.Millisecond},
		{Minute: m - 9, N: 1, Sum: 2 * time.Millisecond, Max: 2 * time.Millisecond},
		{Minute: m - 3, N: 2, Sum: 6 * time.Millisecond, Max: 5 * time.Millisecond}}
	c := lineChart("x", "x", now, slots, "empty")
	if c.Empty != "" || len(c.Lines) != 2 || len(c.Dots) != 2 {
		t.Fatalf("lines %d, dots %d, empty %q; want a line and a dot per series", len(c.Lines), len(c.Dots), c.Empty)
	}
	if n := strings.Count(c.Lines[0].Points, ","); n != 2 {
		t.Errorf("first line has %d points, want 2: %s", n, c.Lines[0].Points)
	}
	if c := lineChart("x", "x", now, nil, "nothing yet"); c.Empty != "nothing yet" || len(c.Lines) != 0 {
		t.Errorf("no slots: %+v", c)
	}
}

// A store that cannot be read leaves the in-memory charts drawn and says
// in words why the others are missing; GET /charts still answers.
func TestChartsWithoutTheStore(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "warp.db"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)
	svc, err := warp.NewService(db, warp.Config{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(svc, Config{ChartsTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	d.ObserveHTTP("POST /heartbeat", 200, 3*time.Millisecond)
	d.ObserveHTTP("GET /v1/tickets", 200, time.Second) // not a heartbeat: not kept
	if got := d.chartsData(ctx); got.Problem != "" || len(got.Charts) != 3 {
		t.Fatalf("with the store: problem %q, %d charts", got.Problem, len(got.Charts))
	}
	db.Close()
	got := d.chartsData(ctx)
	if got.Problem == "" || len(got.Charts) != 0 || len(got.Memory) != 2 || got.Memory[0].Empty != "" {
		t.Fatalf("without the store: problem %q, %d charts, memory %+v", got.Problem, len(got.Charts), got.Memory)
	}
	if l := got.Memory[0].Legend; len(l) != 2 || l[1].Total != "3 ms" {
		t.Errorf("latency legend %+v, want max 3 ms (the other route left out)", l)
	}
	rec := httptest.NewRecorder()
	d.charts(rec, httptest.NewRequest(http.MethodGet, ChartsPath+"?"+ChartsFragment+"=1", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `id="charts-problem"`) {
		t.Errorf("GET /charts without the store: %d\n%s", rec.Code, rec.Body.String())
	}
}
