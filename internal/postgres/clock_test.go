package postgres_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/postgres"
	"github.com/gyrum-labs/warp/internal/warp"
	"github.com/gyrum-labs/warp/internal/warpcli"
	"github.com/gyrum-labs/warp/internal/warpcli/warpclitest"
)

// offClock gives schema a database clock that reads d behind
// PostgreSQL's own: clock_timestamp() of the schema, which the store's
// reading finds first when the URL's search_path names the schema before
// pg_catalog. It stands for a database host whose clock is off from the
// replicas' hosts, and a step of that clock when d changes.
func offClock(t *testing.T, schema string, d time.Duration) {
	t.Helper()
	if _, err := adminPool(t).Exec(context.Background(), "CREATE OR REPLACE FUNCTION "+schema+
		".clock_timestamp() RETURNS timestamptz LANGUAGE sql AS $$ SELECT pg_catalog.clock_timestamp() - make_interval(secs => "+
		strconv.FormatFloat(d.Seconds(), 'f', -1, 64)+") $$"); err != nil {
		t.Fatal(err)
	}
}

// near fails t unless got is within tol of want.
func near(t *testing.T, what string, got, want time.Time, tol time.Duration) {
	t.Helper()
	if d := got.Sub(want); d < -tol || d > tol {
		t.Errorf("%s: %v, want %v (±%v): off by %v", what, got, want, tol, d)
	}
}

// The replicas of one database keep the database's time, not their
// hosts': two replicas on a database whose clock is ten minutes behind
// their host's both read it. When the database's clock then steps back
// another ten minutes, a Service composed as warp serve composes it
// (Now: the database's clock, Elapsed: the process's monotonic clock)
// keeps time on the time that elapsed: it does not go back, and runs ten
// minutes ahead of the database's clock until it has slewed the step away.
func TestReplicasKeepTheDatabasesTime(t *testing.T) {
	ctx := context.Background()
	schema, u := newSchema(t)
	u = withParams(t, u, "search_path", schema+",pg_catalog")
	offClock(t, schema, 10*time.Minute)
	var replicas []*postgres.DB
	for range 2 {
		db, err := postgres.Open(ctx, u, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		replicas = append(replicas, db)
	}
	// The tolerances are far from the steps (10 and 20 minutes) and far
	// from what a busy machine adds between two readings.
	const slack = 30 * time.Second
	host := time.Now()
	near(t, "replica 0's time", replicas[0].Now(), host.Add(-10*time.Minute), slack)
	near(t, "replica 1's time", replicas[1].Now(), replicas[0].Now(), slack)

	svc, err := warp.NewService(replicas[0], warp.Config{Now: replicas[0].Now, Elapsed: warp.MonotonicClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if err := svc.Init(ctx); err != nil {
		t.Fatal(err)
	}
	before := svc.Now()
	offClock(t, schema, 20*time.Minute) // the database's clock steps back
	if err := postgres.ReadClock(ctx, replicas[0]); err != nil {
		t.Fatal(err)
	}
	near(t, "the database's time after its step", replicas[0].Now(), time.Now().Add(-20*time.Minute), slack)
	after := svc.Now()
	if after.Before(before) {
		t.Fatalf("the service's time went back from %v to %v", before, after)
	}
	near(t, "the service's time after the step", after, before, slack)
	if ahead := svc.ClockAhead(); ahead < 10*time.Minute-slack || ahead > 10*time.Minute+slack {
		t.Errorf("the service runs %v ahead of the database's clock, want 10m (±%v: the slew so far, the readings' round trips)", ahead, slack)
	}
}

// warp serve on PostgreSQL takes the database's clock: its service time
// is the database's, ten minutes behind the host's here.
func TestServeTakesTheDatabasesClock(t *testing.T) {
	schema, u := newSchema(t)
	offClock(t, schema, 10*time.Minute)
	srv := warpclitest.Start(t, func(c *warpcli.ServeConfig) {
		c.DB = withParams(t, u, "search_path", schema+",pg_catalog")
		c.Now = nil // as warp serve runs
	})
	near(t, "warp's time", srv.Service.Now(), time.Now().Add(-10*time.Minute), 30*time.Second) // the step, not what a busy machine adds
}
