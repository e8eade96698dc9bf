package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/metrics"
	"github.com/gyrum-labs/warp/internal/warp"
)

// UnderLoad is what the expiry job's ticks cost while the fleet's
// heartbeats arrive: a paced load generator POSTs v2 heartbeats for the
// held leases at Rate per second over the real HTTP API while a tick
// (sweep and verdict pass) runs every TickEvery.
type UnderLoad struct {
	// Rate is the heartbeats per second asked for; Achieved what the
	// server answered (lower when it cannot keep up).
	Rate     float64 `json:"rate"`
	Achieved float64 `json:"achieved"`
	Errors   int     `json:"errors"`
	Seconds  float64 `json:"seconds"`
	// Heartbeat latency percentiles.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	// Ticks: how many ran, median and worst. Nothing is due in them: the
	// figure is a tick's floor under ingest (the single writer shared with
	// the heartbeats' group commits).
	Ticks     int     `json:"ticks"`
	TickP50Ms float64 `json:"tick_p50_ms"`
	TickMaxMs float64 `json:"tick_max_ms"`
}

// scrapeMs returns the median duration of three /metrics scrapes of svc
// (the verdict gauges, hosts, alarms and mode read from the store).
func scrapeMs(svc *warp.Service) (float64, error) {
	m, err := metrics.New(svc, metrics.Config{})
	if err != nil {
		return 0, err
	}
	h := m.Handler()
	var ds []time.Duration
	for range 3 {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		start := time.Now()
		h.ServeHTTP(rec, req)
		ds = append(ds, time.Since(start))
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(metrics.NameClaimedLeases)) {
			return 0, fmt.Errorf("bench: /metrics answered %d without %s", rec.Code, metrics.NameClaimedLeases)
		}
	}
	slices.Sort(ds)
	return ms(ds[1]), nil
}

// hostsMs returns the median duration of three reads of the hosts
// overview of svc; every host must be there (benchSweep spreads the leases
// over 1000 hosts, or fewer when there are fewer leases).
func hostsMs(ctx context.Context, svc *warp.Service) (float64, error) {
	var ds []time.Duration
	for range 3 {
		start := time.Now()
		hs, err := svc.Hosts(ctx, warp.DefaultAdoptionWindow)
		ds = append(ds, time.Since(start))
		if err != nil {
			return 0, fmt.Errorf("bench: hosts: %w", err)
		}
		if len(hs) == 0 {
			return 0, fmt.Errorf("bench: the hosts overview is empty")
		}
	}
	slices.Sort(ds)
	return ms(ds[1]), nil
}

// underLoad serves svc's API and POSTs heartbeats for tickets S-from..S-(n-1)
// (held, epoch 1, agent bench, host host-i%1000, as benchSweep loads
// them) at cfg.LoadRate for cfg.LoadDuration, running a tick every
// cfg.LoadTickEvery meanwhile.
func underLoad(ctx context.Context, cfg Config, svc *warp.Service, from, n int) (UnderLoad, error) {
	res := UnderLoad{Rate: cfg.LoadRate}
	if n <= from {
		return res, fmt.Errorf("bench: no held lease left to heartbeat (%d..%d)", from, n)
	}
	api, err := httpapi.NewServer(svc, httpapi.ServerConfig{})
	if err != nil {
		return res, err
	}
	s, err := serve(api)
	if err != nil {
		return res, err
	}
	defer s.close()
	tr := &http.Transport{MaxIdleConns: cfg.Concurrency, MaxIdleConnsPerHost: cfg.Concurrency, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	url := s.url() + "/v1/heartbeat"

	// Warm-up, not measured: one heartbeat for every lease, then one tick.
	// benchSweep leaves half of these leases silent, and a heartbeat that
	// revives one leaves a verdict change for the next verdict pass to
	// record; recorded here, the measured ticks have nothing due.
	if err := warmUp(ctx, hc, url, cfg.Concurrency, from, n); err != nil {
		return res, err
	}
	if _, err := svc.Sweep(ctx); err != nil {
		return res, fmt.Errorf("bench: warm-up tick: %w", err)
	}
	if _, err := svc.VerdictPass(ctx); err != nil {
		return res, fmt.Errorf("bench: warm-up tick: %w", err)
	}

	lctx, stop := context.WithTimeout(ctx, cfg.LoadDuration)
	defer stop()
	var (
		next, errs atomic.Int64
		mu         sync.Mutex
		lat        []time.Duration
		firstErr   error
		wg         sync.WaitGroup
	)
	start := time.Now()
	interval := time.Duration(float64(time.Second) / cfg.LoadRate)
	for range cfg.Concurrency {
		wg.Go(func() {
			var mine []time.Duration
			defer func() {
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			}()
			for {
				i := next.Add(1) - 1
				// Paced: request i leaves at start + i/rate, or at once
				// when the server is behind.
				if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
					select {
					case <-lctx.Done():
						return
					case <-time.After(wait):
					}
				}
				if lctx.Err() != nil {
					return
				}
				k := from + int(i)%(n-from)
				t0 := time.Now()
				err := postOnce(lctx, hc, url, "", heartbeatBody(k))
				if lctx.Err() != nil {
					return // cut at the end of the run: not an answer
				}
				if err != nil {
					if errs.Add(1) == 1 {
						mu.Lock()
						firstErr = err
						mu.Unlock()
					}
					continue
				}
				mine = append(mine, time.Since(t0))
			}
		})
	}
	var ticks []time.Duration
	var tickErr error
	tk := time.NewTicker(cfg.LoadTickEvery)
	for done := false; !done; {
		select {
		case <-lctx.Done():
			done = true
		case <-tk.C:
			t0 := time.Now()
			if _, err := svc.Sweep(ctx); err != nil {
				tickErr = err
			} else if _, err := svc.VerdictPass(ctx); err != nil {
				tickErr = err
			}
			ticks = append(ticks, time.Since(t0))
		}
	}
	tk.Stop()
	wg.Wait()
	elapsed := time.Since(start)
	if tickErr != nil {
		return res, fmt.Errorf("bench: tick under load: %w", tickErr)
	}
	if len(lat) == 0 {
		return res, fmt.Errorf("bench: no heartbeat under load succeeded: %v", firstErr)
	}
	if e := errs.Load(); e > int64(len(lat))/100 {
		return res, fmt.Errorf("bench: %d of %d heartbeats under load failed, the first: %v", e, int(e)+len(lat), firstErr)
	}
	slices.Sort(lat)
	slices.Sort(ticks)
	res.Achieved, res.Errors, res.Seconds = float64(len(lat))/elapsed.Seconds(), int(errs.Load()), elapsed.Seconds()
	res.P50Ms, res.P99Ms = ms(percentile(lat, 0.5)), ms(percentile(lat, 0.99))
	res.Ticks = len(ticks)
	if len(ticks) > 0 {
		res.TickP50Ms, res.TickMaxMs = ms(percentile(ticks, 0.5)), ms(ticks[len(ticks)-1])
	}
	return res, nil
}

// warmUp POSTs one heartbeat for each of the leases S-from..S-(n-1),
// conc at a time, unpaced.
func warmUp(ctx context.Context, hc *http.Client, url string, conc, from, n int) error {
	var next atomic.Int64
	next.Store(int64(from))
	errs := make([]error, conc)
	var wg sync.WaitGroup
	for c := range conc {
		wg.Go(func() {
			for k := int(next.Add(1) - 1); k < n && errs[c] == nil; k = int(next.Add(1) - 1) {
				errs[c] = postOnce(ctx, hc, url, "", heartbeatBody(k))
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bench: warm-up heartbeats: %w", err)
	}
	return nil
}

// heartbeatBody is the v2 heartbeat of lease S-k as benchSweep loads it.
func heartbeatBody(k int) []byte {
	return fmt.Appendf(nil, `{"schema_version":2,"ticket":"S-%d","epoch":1,"host":"host-%d","agent":"bench","activity_age_s":3.5}`, k, k%1000)
}

// postOnce POSTs body to url, with token as a bearer token unless empty,
// and wants a 200.
func postOnce(ctx context.Context, hc *http.Client, url, token string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(data))
	}
	return nil
}
