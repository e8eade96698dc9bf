package sqlite

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// fillAll sets every field of the struct v points to a value of its own,
// none zero: strings name their field, numbers count up, times step by
// seconds (with a monotonic reading and a zone, which the store drops),
// booleans true. A field packLease forgets then comes back zero.
func fillAll(t *testing.T, v any, n *int64) {
	t.Helper()
	rv := reflect.ValueOf(v).Elem()
	base := time.Now().In(time.FixedZone("X", 3600))
	for i := range rv.NumField() {
		f, name := rv.Field(i), rv.Type().Field(i).Name
		*n++
		switch {
		case f.Type() == reflect.TypeFor[time.Time]():
			f.Set(reflect.ValueOf(base.Add(time.Duration(*n) * time.Second)))
		case f.Kind() == reflect.String:
			f.SetString(fmt.Sprintf("%s-%d", name, *n))
		case f.Kind() == reflect.Int || f.Kind() == reflect.Int64:
			f.SetInt(*n * 1_000_003)
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.Kind() == reflect.Slice && name == "Labels": // not cached
		default:
			t.Fatalf("field %s of kind %s: teach fillAll and packLease", name, f.Kind())
		}
	}
}

// Every field of a ticket (but its labels) and of a lease comes back from
// the cache as a read of its row gives it.
func TestPackLeaseKeepsEveryField(t *testing.T) {
	var n int64
	var tk warp.Ticket
	var l warp.Lease
	fillAll(t, &tk, &n)
	fillAll(t, &l, &n)
	got := unpackLease(packLease(tk, l))
	want := cachedLease{t: tk, l: stored(l)}
	want.t.Labels = nil
	want.t.CreatedAt, want.t.UpdatedAt = fromNanos(nanos(tk.CreatedAt)), fromNanos(nanos(tk.UpdatedAt))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("unpacked\n%+v\nwant\n%+v", got, want)
	}
	// Zero values, empty strings and a false flag too.
	if got := unpackLease(packLease(warp.Ticket{}, warp.Lease{})); !reflect.DeepEqual(got, cachedLease{}) {
		t.Fatalf("zero values unpacked as %+v", got)
	}
}

// stored returns l as a read of its row returns it: every time as the
// column holds it (UTC nanoseconds, no monotonic reading).
func stored(l warp.Lease) warp.Lease {
	for _, p := range []*time.Time{&l.ClaimedAt, &l.LastHeartbeatAt, &l.LastActivityAt, &l.FirstV2At,
		&l.RefreshedAt, &l.ExpiresAt, &l.ExitedAt, &l.EndedAt, &l.VerdictDueAt} {
		*p = fromNanos(nanos(*p))
	}
	return l
}

// BenchmarkPackLease measures a cache write and read of one lease.
func BenchmarkPackLease(b *testing.B) {
	var n int64
	var tk warp.Ticket
	var l warp.Lease
	t := &testing.T{}
	fillAll(t, &tk, &n)
	fillAll(t, &l, &n)
	tk.Labels = nil
	b.ReportAllocs()
	for b.Loop() {
		e := unpackLease(packLease(tk, l))
		if e.l.Epoch != l.Epoch {
			b.Fatal("epoch")
		}
	}
}
