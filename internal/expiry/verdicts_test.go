package expiry_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/expiry"
	"github.com/gyrum-labs/warp/internal/warp"
)

func TestRunOnceRecordsVerdictChanges(t *testing.T) {
	f := newFixture(t)
	var logs bytes.Buffer
	j, err := expiry.New(f.svc, expiry.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f.claim(t, "QUIET")
	res, err := j.RunOnce(ctx)
	if err != nil || len(res.VerdictChanges) != 0 {
		t.Fatalf("fresh claim: %v, changes %+v; want none", err, res.VerdictChanges)
	}
	// No heartbeat for longer than the silent threshold, within the lease window.
	f.clock.Advance(warp.DefaultSilentAfter + time.Second)
	res, err = j.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Lapsed) != 0 || len(res.VerdictChanges) != 1 {
		t.Fatalf("got %d lapsed, %+v changes; want 0 and one", len(res.Lapsed), res.VerdictChanges)
	}
	c := res.VerdictChanges[0]
	if c.Ticket != "QUIET" || c.From != warp.VerdictActive || c.To != warp.VerdictSilent {
		t.Errorf("change %+v, want QUIET active → silent", c)
	}
	if !strings.Contains(logs.String(), `msg="verdict changed" ticket=QUIET epoch=1 from=active to=silent`) {
		t.Errorf("log lacks the verdict change: %s", logs.String())
	}
	// The next sweep has nothing new to record.
	if res, err = j.RunOnce(ctx); err != nil || len(res.VerdictChanges) != 0 {
		t.Fatalf("second sweep: %v, changes %+v; want none", err, res.VerdictChanges)
	}
}

func TestBackgroundJobReportsVerdictChanges(t *testing.T) {
	f := newFixture(t)
	f.claim(t, "QUIET")
	f.clock.Advance(warp.DefaultSilentAfter + time.Second)
	got := make(chan warp.SweepResult, 16)
	j, err := expiry.New(f.svc, expiry.Config{Interval: time.Hour, OnSweep: func(r warp.SweepResult) { got <- r }})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	select {
	case r := <-got:
		if len(r.VerdictChanges) != 1 || r.VerdictChanges[0].To != warp.VerdictSilent {
			t.Errorf("first sweep reported %+v, want QUIET going silent", r.VerdictChanges)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no sweep reported within 10 s")
	}
}
