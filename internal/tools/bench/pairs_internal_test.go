package bench

import "testing"

// The pair reported is the one with the median ratio — its own rate,
// latencies and anchor, not a mix — with the spread of all of them.
func TestMedianPair(t *testing.T) {
	rs := []IngestResult{
		{PerSecond: 600, Anchor: 1000, P99Ms: 1}, // 0.6
		{PerSecond: 400, Anchor: 1000, P99Ms: 2}, // 0.4
		{PerSecond: 450, Anchor: 900, P99Ms: 3},  // 0.5
	}
	m := medianPair(rs)
	if m.PerSecond != 450 || m.Anchor != 900 || m.P99Ms != 3 || m.Pairs != 3 || m.RatioMin != 0.4 || m.RatioMax != 0.6 {
		t.Errorf("got %+v, want the 0.5 pair (450/900, p99 3) with 3 pairs over 0.4..0.6", m)
	}
	if rs[0].PerSecond != 600 {
		t.Error("medianPair reordered its argument")
	}
	one := medianPair(rs[:1])
	if one.PerSecond != 600 || one.Pairs != 1 || one.RatioMin != 0.6 || one.RatioMax != 0.6 {
		t.Errorf("one pair: got %+v", one)
	}
}

// Only a server reached over loopback or a socket is this machine's.
func TestLocalPostgres(t *testing.T) {
	for url, want := range map[string]bool{
		"postgres://u@127.0.0.1:5432/db":                true,
		"postgres://u@localhost/db":                     true,
		"postgres://u@[::1]:5432/db":                    true,
		"host=/var/run/postgresql dbname=db":            true,
		"postgres://u@db.example.com/db":                false,
		"postgres://u@10.0.0.5/db":                      false,
		"postgres://u@127.0.0.1,db.example.com:5433/db": false,
		"postgres://u@127.0.0.1:5432,localhost:5433/db": true,
	} {
		got, err := localPostgres(url)
		if err != nil || got != want {
			t.Errorf("localPostgres(%q) = %v, %v; want %v", url, got, err, want)
		}
	}
	if _, err := localPostgres("postgres://u@[::1/db"); err == nil {
		t.Error("a malformed URL gave no error")
	}
}
