package sqlite_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/sqlite"
)

// The charts' reads are range reads of their indexes (migration 0008),
// not scans of every event or every count row.
func TestTalliesPlans(t *testing.T) {
	db := MustOpen(t)
	ctx := context.Background()
	for _, c := range []struct {
		name, query, want string
		args              []any
	}{
		{"event tallies", sqlite.EventTalliesSQL("?, ?"), "USING INDEX events_kind_at (kind=? AND at>?)", []any{"lapsed", "verdict-changed", 0, 10}},
		{"hosts by schema per hour", sqlite.HostsBySchemaPerHourSQL, "USING COVERING INDEX heartbeat_counts_span_bucket (span=? AND bucket>?)", []any{0, 10}},
	} {
		plan, err := db.QueryPlan(ctx, c.query, c.args...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !strings.Contains(strings.Join(plan, "\n"), c.want) {
			t.Errorf("%s: plan\n%s\nwant %q", c.name, strings.Join(plan, "\n"), c.want)
		}
	}
}
