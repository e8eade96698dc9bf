package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// testHostSeenStep: a host's row is rewritten when its last-seen moves by
// warp.HostSeenStep or its schema version changes, never backwards — by
// RecordHeartbeat and by Tx.WriteBatch alike.
func testHostSeenStep(t *testing.T, open func(t *testing.T) warp.Store) {
	e := newEnv(t, open)
	base := e.clock.Now().Truncate(time.Second)
	step := warp.HostSeenStep
	type want struct {
		schema int
		seen   time.Time
	}
	for _, path := range []string{"one", "batch"} {
		host := "seen-" + path
		record := func(schema int, at time.Time) {
			t.Helper()
			c := warp.HeartbeatCount{Host: host, Token: "tok", SchemaVersion: schema, At: at, N: 1}
			err := e.store.Update(e.ctx, func(tx warp.Tx) error {
				if path == "batch" {
					// With companions, so a store's multi-row statements
					// write the host's row, not only its one-row form.
					cs := []warp.HeartbeatCount{c}
					for j := range 8 {
						cs = append(cs, warp.HeartbeatCount{Host: fmt.Sprintf("%s-%d", host, j), Token: "tok", SchemaVersion: schema, At: at, N: 1})
					}
					return tx.WriteBatch(e.ctx, nil, cs)
				}
				_, err := tx.RecordHeartbeat(e.ctx, c)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		row := func() want {
			t.Helper()
			var rows []warp.HostAdoption
			if err := e.store.View(e.ctx, func(tx warp.Tx) (err error) { rows, err = tx.Adoption(e.ctx, base.Add(-time.Hour)); return err }); err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				if r.Host == host {
					return want{r.LastSchemaVersion, r.LastSeen}
				}
			}
			t.Fatalf("%s: no row for %s", path, host)
			return want{}
		}
		for i, s := range []struct {
			schema int
			at     time.Time
			want   want
		}{
			{1, base, want{1, base}},                                       // new host
			{1, base.Add(step / 2), want{1, base}},                         // within the step: kept
			{1, base.Add(step), want{1, base.Add(step)}},                   // a step on: moved
			{2, base.Add(step + step/4), want{2, base.Add(step + step/4)}}, // a new schema version: at once
			{1, base.Add(step / 4), want{2, base.Add(step + step/4)}},      // older, other schema: never backwards
			{2, base.Add(3 * step), want{2, base.Add(3 * step)}},           // a step on again
		} {
			record(s.schema, s.at)
			if got := row(); got.schema != s.want.schema || !got.seen.Equal(s.want.seen) {
				t.Errorf("%s, step %d (v%d at +%v): row v%d seen +%v, want v%d seen +%v", path, i, s.schema, s.at.Sub(base),
					got.schema, got.seen.Sub(base), s.want.schema, s.want.seen.Sub(base))
			}
		}
	}
}
