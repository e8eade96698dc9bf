package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/warp"
	"github.com/gyrum-labs/warp/internal/warpcli"
	"github.com/gyrum-labs/warp/internal/warpcli/warpclitest"
)

// Shape of the benchmark database: 100k tickets, of which 10k are claimed
// (7000 active, 1500 stalled, 1000 silent, 500 exited, on 100 hosts), 50k
// completed (each with its ended lease and its events) and 40k open.
const (
	benchTickets   = 100_000
	benchClaimed   = 10_000
	benchCompleted = 50_000
	benchHosts     = 100
)

// seedBench fills a fresh SQLite file through the store, in batches of
// 10k rows a transaction, and returns its path. now is the server clock.
func seedBench(b *testing.B, now time.Time) string {
	b.Helper()
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "warp.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	p := warp.DefaultPolicy()
	const batch = 10_000
	for start := 0; start < benchTickets; start += batch {
		err := db.Update(ctx, func(tx warp.Tx) error {
			for i := start; i < start+batch; i++ {
				id := fmt.Sprintf("T-%06d", i)
				created := now.Add(-time.Duration(benchTickets-i) * time.Second)
				tk, err := tx.CreateTicket(ctx, warp.Ticket{ID: id, Title: "benchmark ticket " + id,
					Labels: []string{"bench"}, State: warp.TicketOpen, CreatedAt: created, UpdatedAt: created})
				if err != nil {
					return err
				}
				if _, err := tx.AppendEvent(ctx, warp.NewEvent(id, 0, created, warp.CreatedData{Title: tk.Title})); err != nil {
					return err
				}
				var l warp.Lease
				switch {
				case i%10 == 0: // 10k claimed, spread over the sequence
					n := i / 10
					l = benchLease(id, n, now, p)
					tk.State = warp.TicketClaimed
					if _, err := tx.RecordHeartbeat(ctx, warp.HeartbeatCount{Host: l.Host, SchemaVersion: 2, At: l.LastHeartbeatAt.Add(-time.Duration(n) * time.Second), N: 1}); err != nil {
						return err
					}
				case i%10 <= 5: // 50k completed
					l = benchLease(id, i, now.Add(-2*time.Hour), p)
					l.State, l.EndedAt, l.PRURL = warp.LeaseCompleted, now.Add(-time.Hour), "https://example.com/pr/"+id
					tk.State = warp.TicketCompleted
				default: // 40k open, never claimed
					continue
				}
				if err := tx.InsertLease(ctx, l); err != nil {
					return err
				}
				// A claim counts its lease active; the server's verdict pass
				// then moves it to the verdict its times give, as the
				// service does (without this the page counted -3000 active).
				if l.State == warp.LeaseHeld {
					if err := tx.AddVerdictCounts(ctx, l.Host, warp.NewHeldCounts(l.HookSeen, 1)); err != nil {
						return err
					}
				}
				tk.Epoch, tk.UpdatedAt = 1, l.ClaimedAt
				if err := tx.UpdateTicket(ctx, tk); err != nil {
					return err
				}
				if _, err := tx.AppendEvent(ctx, warp.NewEvent(id, 1, l.ClaimedAt, warp.ClaimedData{Agent: l.Agent, Host: l.Host})); err != nil {
					return err
				}
				if l.State == warp.LeaseCompleted {
					if _, err := tx.AppendEvent(ctx, warp.NewEvent(id, 1, l.EndedAt, warp.CompletedData{PRURL: l.PRURL, Agent: l.Agent, Host: l.Host})); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			b.Fatalf("seed: %v", err)
		}
	}
	return path
}

// benchLease is the held lease number n: 70% active, 15% stalled, 10%
// silent, 5% exited.
func benchLease(id string, n int, now time.Time, p warp.Policy) warp.Lease {
	claimed := now.Add(-time.Hour)
	l := warp.Lease{Ticket: id, Epoch: 1, Agent: fmt.Sprintf("agent-%d", n%500), Host: fmt.Sprintf("host-%02d", n%benchHosts),
		State: warp.LeaseHeld, ClaimedAt: claimed, SchemaVersion: 2, FirstV2At: claimed}
	switch r := n % 20; {
	case r < 14:
		l.LastHeartbeatAt, l.LastActivityAt = now.Add(-time.Minute), now.Add(-2*time.Minute)
	case r < 17:
		l.LastHeartbeatAt, l.LastActivityAt = now.Add(-time.Minute), now.Add(-20*time.Minute)
	case r < 19:
		l.LastHeartbeatAt, l.LastActivityAt = now.Add(-12*time.Minute), now.Add(-12*time.Minute)
	default:
		l.LastHeartbeatAt, l.LastActivityAt = now.Add(-time.Minute), now.Add(-time.Minute)
		l.Exit, l.ExitedAt = warp.ExitParentExited, now.Add(-time.Minute)
	}
	// Far in the future, so the server's start sweep lapses nothing.
	l.RefreshedAt, l.ExpiresAt = l.LastHeartbeatAt, now.Add(24*time.Hour)
	l.VerdictDueAt = p.VerdictDue(l, now)
	return l
}

// BenchmarkDashboard100k measures the dashboard's pages over HTTP on a
// database of 100k tickets (see seedBench), served by warp in-process.
//
//	go test ./internal/dashboard -run '^$' -bench Dashboard100k -benchtime 200x
func BenchmarkDashboard100k(b *testing.B) {
	now := time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)
	start := time.Now()
	path := seedBench(b, now)
	b.Logf("seeded %d tickets in %s", benchTickets, time.Since(start))
	onBench := func(c *warpcli.ServeConfig) {
		c.DB = path
		c.Now = func() time.Time { return now }
	}
	m := warpclitest.Start(b, onBench)
	// A second server on the same file counts the verdicts on every page.
	fresh := warpclitest.Start(b, func(c *warpcli.ServeConfig) {
		onBench(c)
		c.Dashboard.SummaryTTL = -1
	})
	hc := &http.Client{}
	base := m.URL()
	fetch := func(b *testing.B, path string) string {
		resp, err := hc.Get(base + path)
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
		}
		return string(body)
	}
	// The 20th page of the main list, to show a deep cursor costs the same.
	next := regexp.MustCompile(`<a id="next" rel="next" href="/\?cursor=(\d+)">`)
	cursor := ""
	for range 20 {
		mm := next.FindStringSubmatch(fetch(b, "/?cursor="+cursor))
		if mm == nil {
			b.Fatal("no next page")
		}
		cursor = mm[1]
	}
	// Check the seeded verdicts are what the page counts.
	body := fetch(b, "/")
	for _, want := range []string{`<b id="count-active">7000</b>`, `<b id="count-stalled">1500</b>`,
		`<b id="count-silent">1000</b>`, `<b id="count-exited">500</b>`} {
		if !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(body) {
			b.Fatalf("main page lacks %s; it counts %q", want, regexp.MustCompile(`id="count-[a-z]+">[^<]*<`).FindAllString(body, -1))
		}
	}
	for _, c := range []struct{ name, path string }{
		{"main", "/"},
		{"main-uncached-counts", "/"},
		{"page20", "/?cursor=" + cursor},
		{"verdict=stalled", "/?verdict=stalled"},
		{"verdict=exited", "/?verdict=exited"},
		{"host", "/?host=host-07"},
		{"ticket", "/tickets/T-050000"},
		{"hosts", "/hosts"},
	} {
		b.Run(c.name, func(b *testing.B) {
			base = m.URL()
			if c.name == "main-uncached-counts" {
				base = fresh.URL()
			}
			for b.Loop() {
				fetch(b, c.path)
			}
		})
	}
}
