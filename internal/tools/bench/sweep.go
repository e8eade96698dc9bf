package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/warp"
)

// SweepResult is the cost of the expiry sweep over Active held leases.
type SweepResult struct {
	Active int `json:"active_leases"`
	Due    int `json:"due_per_sweep"`
	Sweeps int `json:"sweeps"`
	// LoadSeconds is how long filling the database took (not part of the figure).
	LoadSeconds float64 `json:"load_seconds"`
	// A sweep that lapses Due leases: median and worst.
	P50Ms float64 `json:"p50_ms"`
	MaxMs float64 `json:"max_ms"`
	// IdleMs is a sweep with nothing due: the cost every interval pays.
	IdleMs float64 `json:"idle_ms"`
	// A sweep tick as the expiry job runs it: the sweep (Due lapses) and
	// the verdict pass (Due leases turning silent): median and worst, and
	// a tick with nothing due or changing.
	TickP50Ms  float64 `json:"tick_p50_ms"`
	TickMaxMs  float64 `json:"tick_max_ms"`
	TickIdleMs float64 `json:"tick_idle_ms"`
	// ScrapeMs is a /metrics scrape (median of three) once the ticks ran;
	// HostsMs the hosts overview (Service.Hosts: what GET /v1/hosts, the
	// hosts page and warp hosts read), median of three.
	ScrapeMs float64 `json:"scrape_ms"`
	HostsMs  float64 `json:"hosts_ms"`
	// UnderLoad: ticks while heartbeats arrive (absent when LoadRate is 0).
	UnderLoad *UnderLoad `json:"under_load,omitempty"`
}

// clock is a settable clock for the service.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// loadBatch is the number of rows per transaction while filling.
const loadBatch = 5000

// benchSweep fills a SQLite database with n claimed tickets and their held
// leases through the Store contract, the first Sweeps×Due of them due one
// batch per second, the rest an hour away; then it sweeps once with nothing
// due and Sweeps times with Due leases due each.
func benchSweep(ctx context.Context, cfg Config, root string, n int) (SweepResult, error) {
	dir := filepath.Join(root, fmt.Sprintf("sweep-%d", n))
	if err := mkdir(dir); err != nil {
		return SweepResult{}, err
	}
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(ctx, filepath.Join(dir, "warp.db"))
	if err != nil {
		return SweepResult{}, err
	}
	defer db.Close()
	base := time.Date(2026, 5, 6, 22, 0, 0, 0, time.UTC)
	clk := &clock{t: base}
	pol := warp.DefaultPolicy()
	pol.StartupGrace = 0 // no grace: every due lease is swept
	svc, err := warp.NewService(db, warp.Config{Policy: pol, Now: clk.Now})
	if err != nil {
		return SweepResult{}, err
	}
	// Init before the load: it recomputes expiry over every held lease when
	// the lease window is new, which would rewrite the schedule below.
	if err := svc.Init(ctx); err != nil {
		return SweepResult{}, err
	}
	start := time.Now()
	// The first Sweeps×Due leases lapse, Due at each tick; the next
	// Sweeps×Due turn silent, Due at each tick (their last heartbeat
	// crosses the silent threshold); the rest stay active past the run.
	err = loadHeld(ctx, db, n, func(i int) warp.Lease {
		hb, exp := base, base.Add(time.Hour)
		if i < cfg.Sweeps*cfg.Due {
			exp = base.Add(time.Duration(i/cfg.Due+1) * time.Second)
		} else if j := i - cfg.Sweeps*cfg.Due; j < cfg.Sweeps*cfg.Due {
			hb = base.Add(-pol.SilentAfter + time.Duration(j/cfg.Due)*time.Second + 500*time.Millisecond)
		}
		l := warp.Lease{Ticket: fmt.Sprintf("S-%d", i), Epoch: 1, Agent: "bench", Host: fmt.Sprintf("host-%d", i%1000), State: warp.LeaseHeld,
			ClaimedAt: hb, LastHeartbeatAt: hb, LastActivityAt: hb, SchemaVersion: 2, FirstV2At: hb,
			RefreshedAt: hb, ExpiresAt: exp}
		l.VerdictDueAt = pol.VerdictDue(l, base)
		return l
	})
	if err != nil {
		return SweepResult{}, err
	}
	res := SweepResult{Active: n, Due: cfg.Due, Sweeps: cfg.Sweeps, LoadSeconds: time.Since(start).Seconds()}

	clk.Set(base.Add(500 * time.Millisecond))
	idle, err := svc.Sweep(ctx)
	if err != nil {
		return res, fmt.Errorf("bench: idle sweep: %w", err)
	}
	if len(idle.Lapsed) != 0 {
		return res, fmt.Errorf("bench: idle sweep lapsed %d leases, want 0", len(idle.Lapsed))
	}
	res.IdleMs = ms(idle.Duration)
	t0 := time.Now()
	if vp, err := svc.VerdictPass(ctx); err != nil || len(vp.Changes) != 0 {
		return res, fmt.Errorf("bench: idle verdict pass: %d changes, %v; want none", len(vp.Changes), err)
	}
	res.TickIdleMs = ms(idle.Duration + time.Since(t0))
	var ds, ticks []time.Duration
	for k := range cfg.Sweeps {
		clk.Set(base.Add(time.Duration(k+1)*time.Second + 500*time.Millisecond))
		start := time.Now()
		sr, err := svc.Sweep(ctx)
		if err != nil {
			return res, fmt.Errorf("bench: sweep: %w", err)
		}
		if len(sr.Lapsed) != cfg.Due {
			return res, fmt.Errorf("bench: sweep %d lapsed %d leases, want %d", k, len(sr.Lapsed), cfg.Due)
		}
		vp, err := svc.VerdictPass(ctx)
		if err != nil {
			return res, fmt.Errorf("bench: verdict pass: %w", err)
		}
		if len(vp.Changes) != cfg.Due {
			return res, fmt.Errorf("bench: verdict pass %d recorded %d changes, want %d", k, len(vp.Changes), cfg.Due)
		}
		ticks = append(ticks, time.Since(start))
		ds = append(ds, sr.Duration)
	}
	slices.Sort(ds)
	slices.Sort(ticks)
	res.P50Ms, res.MaxMs = ms(percentile(ds, 0.5)), ms(ds[len(ds)-1])
	res.TickP50Ms, res.TickMaxMs = ms(percentile(ticks, 0.5)), ms(ticks[len(ticks)-1])
	if res.ScrapeMs, err = scrapeMs(svc); err != nil {
		return res, err
	}
	if res.HostsMs, err = hostsMs(ctx, svc); err != nil {
		return res, err
	}
	if cfg.LoadRate > 0 {
		// Every lease still held: all but those the sweeps lapsed (the
		// ones that turned silent come back to life).
		ul, err := underLoad(ctx, cfg, svc, cfg.Sweeps*cfg.Due, n)
		if err != nil {
			return res, err
		}
		res.UnderLoad = &ul
	}
	return res, nil
}

// loadHeld creates n claimed tickets and their held leases, lease(i) for
// i in 0..n-1, through the Store contract, loadBatch rows a transaction,
// with the held-lease counts the claims would have left (the gauges and
// the fleet alarm read them).
func loadHeld(ctx context.Context, db warp.Store, n int, lease func(i int) warp.Lease) error {
	for from := 0; from < n; from += loadBatch {
		err := db.Update(ctx, func(tx warp.Tx) error {
			held := map[string]int64{}
			for i := from; i < min(from+loadBatch, n); i++ {
				l := lease(i)
				t := warp.Ticket{ID: l.Ticket, State: warp.TicketClaimed, Epoch: l.Epoch, CreatedAt: l.ClaimedAt, UpdatedAt: l.ClaimedAt}
				if _, err := tx.CreateTicket(ctx, t); err != nil {
					return err
				}
				if err := tx.InsertLease(ctx, l); err != nil {
					return err
				}
				held[l.Host]++
			}
			for h, k := range held {
				if err := tx.AddVerdictCounts(ctx, h, warp.NewHeldCounts(warp.HookUnknown, k)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("bench: load %d leases: %w", n, err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

func mkdir(d string) error {
	if err := os.MkdirAll(d, 0o700); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}
