// Package metrics exposes warp's Prometheus metrics with the official
// client. Every Metrics has its own prometheus.Registry (no package-level
// registry), so two servers in one process — tests — never share series.
//
// Counters are fed by observers the server calls (heartbeats, HTTP requests,
// sweeps, verdict changes); the gauges of claimed leases by verdict, of
// hosts by schema version and of hosts in alarm (activity hook likely
// broken) are computed from the database at scrape time (one indexed count
// per verdict, the hosts' rows, the stored alarms), so they are exact
// and agree across replicas.
package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/warp"
)

// Config configures Metrics.
type Config struct {
	// AdoptionWindow is the window of the hosts-by-schema gauge;
	// warp.DefaultAdoptionWindow when zero.
	AdoptionWindow time.Duration
	// ScrapeTimeout bounds the database reads of one scrape; 5 s when zero.
	ScrapeTimeout time.Duration
	// Logger receives scrape errors; discarded when nil.
	Logger *slog.Logger
}

// Metrics holds warp's series and the registry they are served from.
type Metrics struct {
	svc *warp.Service
	cfg Config
	log *slog.Logger
	reg *prometheus.Registry

	heartbeats    *prometheus.CounterVec
	notExtended   *prometheus.CounterVec
	exitReports   *prometheus.CounterVec
	lapses        *prometheus.CounterVec
	fallback      prometheus.Counter
	sweepDuration prometheus.Histogram
	sweepDue      prometheus.Gauge
	sweeps        prometheus.Counter
	sweepErrors   prometheus.Counter
	verdicts      *prometheus.CounterVec
	httpDuration  *prometheus.HistogramVec
}

// Metric names, for tests and dashboards.
const (
	NameHeartbeats             = "warp_heartbeats_total"
	NameHeartbeatsNotExtended  = "warp_heartbeats_not_extended_total"
	NameExitReports            = "warp_exit_reports_total"
	NameLapses                 = "warp_lapses_total"
	NameLapsesFallbackExtended = "warp_lapses_fallback_extended_total"
	NameSweepDuration          = "warp_sweep_duration_seconds"
	NameSweepDue               = "warp_sweep_due_leases"
	NameSweeps                 = "warp_sweeps_total"
	NameSweepErrors            = "warp_sweep_errors_total"
	NameVerdictChanges         = "warp_verdict_changes_total"
	NameClaimedLeases          = "warp_claimed_leases"
	NameHosts                  = "warp_hosts"
	NameMode                   = "warp_mode"
	NameHostsInAlarm           = "warp_hosts_in_alarm"
	NameHTTPDuration           = "warp_http_request_duration_seconds"
	NameBatchSize              = "warp_heartbeat_batch_size"
	NameBatchDuration          = "warp_heartbeat_batch_duration_seconds"
	NameBatchFailures          = "warp_heartbeat_batch_failures_total"
	NameClockAhead             = "warp_clock_ahead_seconds"
)

// New returns the metrics of svc, registered on a fresh registry together
// with the Go runtime and process collectors.
func New(svc *warp.Service, cfg Config) (*Metrics, error) {
	if svc == nil {
		return nil, fmt.Errorf("metrics: nil service")
	}
	if cfg.AdoptionWindow == 0 {
		cfg.AdoptionWindow = warp.DefaultAdoptionWindow
	}
	if cfg.AdoptionWindow < 0 {
		return nil, warp.Errorf(warp.ErrInvalid, "adoption window must be positive, got %s", cfg.AdoptionWindow)
	}
	if cfg.ScrapeTimeout <= 0 {
		cfg.ScrapeTimeout = 5 * time.Second
	}
	m := &Metrics{svc: svc, cfg: cfg, log: cfg.Logger, reg: prometheus.NewRegistry()}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	m.newCollectors()
	clockAhead := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: NameClockAhead,
		Help: "How far warp's clock runs ahead of the system clock (the database's on PostgreSQL) after that clock stepped back, until the lead is slewed away.",
	}, func() float64 { return svc.ClockAhead().Seconds() })

	m.initLabels()
	m.reg.MustRegister(m.heartbeats, m.notExtended, m.exitReports, m.lapses, m.fallback,
		m.sweepDuration, m.sweepDue, m.sweeps, m.sweepErrors, m.verdicts, m.httpDuration, clockAhead,
		newStoreCollector(m), newBatchCollector(svc),
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m, nil
}

// newCollectors makes m's counters, gauges and histograms (registered by
// New).
func (m *Metrics) newCollectors() {
	m.heartbeats = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: NameHeartbeats,
		Help: "Heartbeat requests by schema version (1, 2, other) and outcome (ok or the error code of the answer).",
	}, []string{"schema_version", "outcome"})
	m.notExtended = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: NameHeartbeatsNotExtended,
		Help: "Accepted heartbeats that did not extend their lease (v1 heartbeats in activity mode).",
	}, []string{"schema_version"})
	m.exitReports = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: NameExitReports,
		Help: "Accepted v2 exit reports by reason.",
	}, []string{"exit"})
	m.lapses = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: NameLapses,
		Help: "Leases the sweep lapsed, by reason (no-activity, no-heartbeat, agent-exited).",
	}, []string{"reason"})
	m.fallback = prometheus.NewCounter(prometheus.CounterOpts{
		Name: NameLapsesFallbackExtended,
		Help: "Lapsed leases that the v1 fallback had kept alive longer than activity alone would have.",
	})
	m.sweepDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    NameSweepDuration,
		Help:    "Duration of lease-expiry sweeps, the verdict pass included.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	})
	m.sweepDue = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: NameSweepDue,
		Help: "Leases that were due (and lapsed) in the latest sweep.",
	})
	m.sweeps = prometheus.NewCounter(prometheus.CounterOpts{Name: NameSweeps, Help: "Completed sweeps."})
	m.sweepErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: NameSweepErrors, Help: "Failed sweeps."})
	m.verdicts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: NameVerdictChanges,
		Help: "Verdict changes recorded by the sweep-time verdict pass.",
	}, []string{"from", "to"})
	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    NameHTTPDuration,
		Help:    "HTTP request durations by route pattern and status code.",
		Buckets: prometheus.DefBuckets,
	}, []string{"route", "code"})
}

// HeartbeatOutcomes are the outcomes a heartbeat of schema version 1 or 2
// can have: ok and the error codes its answer can carry (401 and 403 are
// answered before the heartbeat is read, and are not counted).
var HeartbeatOutcomes = []string{"ok", client.CodeInvalid, client.CodeNotFound, client.CodeStaleEpoch,
	client.CodeNotHolder, client.CodeLeaseEnded, client.CodeTooManyHosts, client.CodeUnavailable, client.CodeInternal}

// otherSchemaOutcomes are the outcomes of a heartbeat whose schema
// version is neither 1 nor 2 (or that could not be decoded).
var otherSchemaOutcomes = []string{client.CodeUnsupportedSchema, client.CodeInvalid, client.CodeBodyTooLarge}

// LapseReasons are the reasons the sweep lapses a lease with.
var LapseReasons = []string{warp.LapseNoActivity, warp.LapseNoHeartbeat, warp.LapseAgentExited, warp.LapseNoProgress}

// heartbeatRoutes are the routes whose request durations exist from the
// first scrape.
var heartbeatRoutes = []string{"POST /v1/heartbeat", "POST /heartbeat"}

// initLabels creates every counter's series of the label values known in
// advance, at 0, so that each metric the Grafana dashboard and the alert
// rules read exists from the first scrape (Prometheus' guidance: a series
// that appears only with its first event makes rate() and increase() miss
// that event, and panels say "No data" on a healthy fleet).
func (m *Metrics) initLabels() {
	for _, sv := range []string{"1", "2"} {
		for _, o := range HeartbeatOutcomes {
			m.heartbeats.WithLabelValues(sv, o)
		}
		m.notExtended.WithLabelValues(sv)
	}
	for _, o := range otherSchemaOutcomes {
		m.heartbeats.WithLabelValues("other", o)
	}
	for _, e := range []string{warp.ExitParentExited, warp.ExitWorktreeGone} {
		m.exitReports.WithLabelValues(e)
	}
	for _, r := range LapseReasons {
		m.lapses.WithLabelValues(r)
	}
	for _, from := range warp.Verdicts() {
		for _, to := range warp.Verdicts() {
			if from != to {
				m.verdicts.WithLabelValues(string(from), string(to))
			}
		}
	}
	for _, r := range heartbeatRoutes {
		m.httpDuration.WithLabelValues(r, "200")
	}
}

// Registry returns the registry the metrics live in.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition format. A
// failing database read drops only the series it feeds (logged); the
// counters are served anyway.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:      slogPrinter{m.log},
		ErrorHandling: promhttp.ContinueOnError,
		Registry:      m.reg,
	})
}

// SchemaLabel is the schema_version label of a heartbeat: "1", "2", or
// "other" for anything undecodable or unsupported, so a client sending
// random versions cannot create series without bound.
func SchemaLabel(v int) string {
	if v == 1 || v == 2 {
		return strconv.Itoa(v)
	}
	return "other"
}

// ObserveHeartbeat counts one heartbeat request. outcome is "ok" or the
// wire error code of the answer; exit is the exit-report reason when the
// heartbeat was one; extended is false for an accepted heartbeat that did
// not extend the lease.
func (m *Metrics) ObserveHeartbeat(schemaVersion int, outcome, exit string, extended bool) {
	sv := SchemaLabel(schemaVersion)
	m.heartbeats.WithLabelValues(sv, outcome).Inc()
	if outcome != "ok" {
		return
	}
	if !extended {
		m.notExtended.WithLabelValues(sv).Inc()
	}
	if warp.ValidExit(exit) {
		m.exitReports.WithLabelValues(exit).Inc()
	}
}

// ObserveHTTP records one request's duration under its route pattern and code.
func (m *Metrics) ObserveHTTP(route string, code int, d time.Duration) {
	m.httpDuration.WithLabelValues(route, strconv.Itoa(code)).Observe(d.Seconds())
}

// ObserveSweep records a completed sweep: its duration, its due count, the
// lapses by reason and the verdict changes of its verdict pass. A lapsed
// lease carries its reason in EndReason; when a caller hands leases as they
// were before the lapse, the reason is derived under the current mode.
func (m *Metrics) ObserveSweep(ctx context.Context, res warp.SweepResult) {
	m.sweeps.Inc()
	m.sweepDuration.Observe(res.Duration.Seconds())
	m.sweepDue.Set(float64(len(res.Lapsed)))
	var mode warp.Mode
	for _, l := range res.Lapsed {
		reason, fb := l.EndReason, l.FallbackExtended
		if reason == "" {
			if mode == "" {
				var err error
				if mode, err = m.svc.Mode(ctx); err != nil {
					m.log.Warn("metrics: read mode for lapse reasons", "err", err)
					mode = warp.DefaultMode
				}
			}
			reason, fb = warp.LapseReason(mode, l)
		}
		m.lapses.WithLabelValues(reason).Inc()
		if fb {
			m.fallback.Inc()
		}
	}
	m.ObserveVerdictChanges(res.VerdictChanges)
}

// ObserveSweepError counts a failed sweep.
func (m *Metrics) ObserveSweepError(error) { m.sweepErrors.Inc() }

// ObserveVerdictChanges counts verdict changes.
func (m *Metrics) ObserveVerdictChanges(cs []warp.VerdictChange) {
	for _, c := range cs {
		m.verdicts.WithLabelValues(string(c.From), string(c.To)).Inc()
	}
}

// storeCollector reads the gauges from the database at scrape time.
type storeCollector struct {
	m                                *Metrics
	claimedDesc, hostsDesc, modeDesc *prometheus.Desc
	alarmDesc                        *prometheus.Desc
}

func newStoreCollector(m *Metrics) *storeCollector {
	return &storeCollector{m: m,
		claimedDesc: prometheus.NewDesc(NameClaimedLeases,
			"Held leases by derived verdict, counted at scrape time.", []string{"verdict"}, nil),
		hostsDesc: prometheus.NewDesc(NameHosts,
			"Hosts seen within the adoption window by the schema version of their latest heartbeat.", []string{"schema_version"}, nil),
		modeDesc: prometheus.NewDesc(NameMode,
			"The current expiry mode: 1 for the mode in force, 0 for the others.", []string{"mode"}, nil),
		alarmDesc: prometheus.NewDesc(NameHostsInAlarm,
			"Hosts whose activity hook is likely broken: most of their leases went stalled or unwired together.", nil, nil),
	}
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.claimedDesc
	ch <- c.hostsDesc
	ch <- c.modeDesc
	ch <- c.alarmDesc
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.ScrapeTimeout)
	defer cancel()
	svc := m.svc
	var mode warp.Mode
	if counts, err := svc.CountVerdicts(ctx); err != nil {
		m.log.Warn("metrics: scrape claimed leases", "err", err)
		ch <- prometheus.NewInvalidMetric(c.claimedDesc, err)
	} else {
		for _, v := range warp.Verdicts() {
			ch <- prometheus.MustNewConstMetric(c.claimedDesc, prometheus.GaugeValue, float64(counts.Counts[v]), string(v))
		}
	}
	// The hosts' rows alone: the adoption query would also sum every
	// heartbeat count of the window, which grows with the fleet's
	// heartbeat-seconds (warpbench runs in the history of docs/BENCHMARKS.md).
	hosts, err := svc.HostsBySchema(ctx, m.cfg.AdoptionWindow)
	if err != nil {
		m.log.Warn("metrics: scrape hosts by schema", "err", err)
		ch <- prometheus.NewInvalidMetric(c.hostsDesc, err)
	} else {
		byVersion := map[string]int{"1": 0, "2": 0}
		for v, n := range hosts {
			byVersion[SchemaLabel(v)] += n
		}
		for v, n := range byVersion {
			ch <- prometheus.MustNewConstMetric(c.hostsDesc, prometheus.GaugeValue, float64(n), v)
		}
	}
	if alarms, err := svc.HostAlarms(ctx); err != nil {
		m.log.Warn("metrics: scrape host alarms", "err", err)
		ch <- prometheus.NewInvalidMetric(c.alarmDesc, err)
	} else {
		ch <- prometheus.MustNewConstMetric(c.alarmDesc, prometheus.GaugeValue, float64(len(alarms)))
	}
	if mode, err = svc.Mode(ctx); err != nil {
		m.log.Warn("metrics: scrape mode", "err", err)
		ch <- prometheus.NewInvalidMetric(c.modeDesc, err)
		return
	}
	for _, md := range []warp.Mode{warp.ModeLegacy, warp.ModeTransition, warp.ModeActivity} {
		v := 0.0
		if md == mode {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.modeDesc, prometheus.GaugeValue, v, string(md))
	}
}

// batchCollector serves the heartbeat group commit's statistics, which
// the Service keeps (this process's own, like the HTTP durations).
type batchCollector struct {
	svc                               *warp.Service
	sizeDesc, durationDesc, failsDesc *prometheus.Desc
}

func newBatchCollector(svc *warp.Service) *batchCollector {
	return &batchCollector{svc: svc,
		sizeDesc: prometheus.NewDesc(NameBatchSize,
			"Heartbeats per committed group-commit transaction of this process.", nil, nil),
		durationDesc: prometheus.NewDesc(NameBatchDuration,
			"Time from a group-commit transaction's start to its commit, retries included.", nil, nil),
		failsDesc: prometheus.NewDesc(NameBatchFailures,
			"Group-commit transactions that failed as a whole (their heartbeats were answered with the error).", nil, nil),
	}
}

func (c *batchCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.sizeDesc
	ch <- c.durationDesc
	ch <- c.failsDesc
}

func (c *batchCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.svc.GroupCommitStats()
	buckets := func(bounds []float64, counts []uint64) map[float64]uint64 {
		m := make(map[float64]uint64, len(bounds))
		for i, b := range bounds {
			m[b] = counts[i]
		}
		return m
	}
	ch <- prometheus.MustNewConstHistogram(c.sizeDesc, st.Batches, float64(st.Heartbeats), buckets(st.SizeBounds, st.SizeCounts))
	ch <- prometheus.MustNewConstHistogram(c.durationDesc, st.Durations, st.Seconds, buckets(st.DurationBounds, st.DurationCounts))
	ch <- prometheus.MustNewConstMetric(c.failsDesc, prometheus.CounterValue, float64(st.Failed))
}

// slogPrinter adapts a *slog.Logger to promhttp's Println logger.
type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Println(v ...any) { p.log.Error("metrics: " + fmt.Sprint(v...)) }
