package storetest

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// SeedCountedHosts claims five tickets on hosts h1 and h2 through svc, with
// hook health unknown, yes, no, yes, unknown, and returns the hosts
// overview: the fixture of each store's test that its counts migration
// backfills what the writes would have counted (compare with SameHosts
// after rolling the schema back and migrating again).
func SeedCountedHosts(t *testing.T, svc *warp.Service) []warp.HostStatus {
	t.Helper()
	ctx := context.Background()
	yes, no := true, false
	for i, hook := range []*bool{nil, &yes, &no, &yes, nil} {
		id := fmt.Sprintf("M-%d", i)
		if _, err := svc.CreateTicket(ctx, warp.NewTicket{ID: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Claim(ctx, id, warp.ClaimRequest{Agent: "a", Host: []string{"h1", "h2"}[i%2]}); err != nil {
			t.Fatal(err)
		}
		if hook != nil {
			if _, err := svc.Heartbeat(ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: id, Epoch: 1, HookSeen: hook}); err != nil {
				t.Fatal(err)
			}
		}
	}
	hs, err := svc.Hosts(ctx, warp.DefaultAdoptionWindow)
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 2 || hs[0].HookSeen[warp.HookUnknown] != 2 || hs[0].HookSeen[warp.HookNo] != 1 || hs[1].HookSeen[warp.HookYes] != 2 {
		t.Fatalf("the fixture is not what the test means: %+v", hs)
	}
	return hs
}

// SameHosts checks that svc's hosts overview equals want: hosts, held
// leases, verdicts and hook health.
func SameHosts(t *testing.T, svc *warp.Service, want []warp.HostStatus) {
	t.Helper()
	got, err := svc.Hosts(context.Background(), warp.DefaultAdoptionWindow)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("hosts: got %+v, want %+v", got, want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Host != w.Host || g.Leases != w.Leases || !maps.Equal(g.Verdicts, w.Verdicts) || !maps.Equal(g.HookSeen, w.HookSeen) {
			t.Errorf("host %s: %d leases %v hook %v; want %s: %d %v %v", g.Host, g.Leases, g.Verdicts, g.HookSeen, w.Host, w.Leases, w.Verdicts, w.HookSeen)
		}
	}
}

// SecondCountsSQL returns the statements that fill a heartbeat_counts table
// of one-second buckets — (host, schema_version, bucket, count), the table
// before the count spans — and the hosts' rows, with the fixture of each
// store's test that its span migration folds the old rows into both spans
// (check with SameFoldedCounts after migrating). Both stores' SQL accepts
// them.
func SecondCountsSQL(table, hosts string) []string {
	var rows []string
	for _, c := range secondCounts() {
		rows = append(rows, fmt.Sprintf("('%s', %d, %d, %d)", c.host, c.schema, c.at.Unix(), c.n))
	}
	seen := T0().Add(3 * time.Hour).UnixNano()
	return []string{
		"INSERT INTO " + table + " (host, schema_version, bucket, count) VALUES " + strings.Join(rows, ", "),
		fmt.Sprintf("INSERT INTO %s (host, token, last_schema_version, last_seen) VALUES ('a', 't', 2, %d), ('b', 't', 1, %d)", hosts, seen, seen),
	}
}

type secondCount struct {
	host   string
	schema int
	at     time.Time
	n      int64
}

// secondCounts are old one-second rows around T0 (a whole hour) and the
// next hour boundary, some in one minute.
func secondCounts() []secondCount {
	var cs []secondCount
	for i, d := range []time.Duration{-90 * time.Second, -30 * time.Second, -1 * time.Second, 0, 10 * time.Second,
		59 * time.Second, 60 * time.Second, 30 * time.Minute, time.Hour - time.Second, time.Hour, time.Hour + 5*time.Second, 2*time.Hour + 30*time.Minute} {
		cs = append(cs, secondCount{[]string{"a", "b"}[i%2], 1 + i%3/2, T0().Add(d), int64(1 + i)})
	}
	return cs
}

// SameFoldedCounts checks that store's adoption, after the span migration
// folded SecondCountsSQL's rows, counts from each window's minute on what
// the one-second rows held.
func SameFoldedCounts(t *testing.T, store warp.Store) {
	t.Helper()
	ctx := context.Background()
	for d := -2 * time.Minute; d <= 3*time.Hour; d += 10 * time.Second {
		since := T0().Add(d)
		from := since.Truncate(time.Minute)
		want := map[string][3]int64{}
		for _, c := range secondCounts() {
			if !c.at.Before(from) {
				w := want[c.host]
				w[c.schema] += c.n
				want[c.host] = w
			}
		}
		var got []warp.HostAdoption
		if err := store.View(ctx, func(tx warp.Tx) (err error) { got, err = tx.Adoption(ctx, since); return err }); err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("since %s: hosts %+v, want a and b", since.Format(time.TimeOnly), got)
		}
		for _, h := range got {
			if w := want[h.Host]; h.V1Count != w[1] || h.V2Count != w[2] {
				t.Errorf("since %s, host %s: v1 %d v2 %d, want %d and %d", since.Format(time.TimeOnly), h.Host, h.V1Count, h.V2Count, w[1], w[2])
			}
		}
	}
}
