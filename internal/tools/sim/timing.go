package sim

import (
	"fmt"
	"math"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gyrum-labs/warp/internal/heartbeat"
)

// The simulator judges its own timing. Every product duration is divided
// by the time scale, but the machine's own latencies are not: a hook exec,
// a timer that fires late on a busy machine, a loop tick that waits for a
// CPU. Once these are a sizeable part of a scaled heartbeat interval, the
// run no longer shows the product's behaviour but the machine's load, and
// its claims are not judged: the verdict says the machine is too loaded
// for the time scale and which scale to use instead.

// Timing series the simulator measures, in wall-clock time.
const (
	// seriesInjection: how late the simulator ran its scheduled actions
	// (tool calls, kills, releases) against the schedule.
	seriesInjection = "injection"
	// seriesHook: how long one `gyrum touch-activity` exec took.
	seriesHook = "hook"
	// seriesTick: how late a loop's heartbeat arrived after the one before,
	// beyond the interval and its jitter (restart outages left out).
	seriesTick = "tick"
	// seriesServer: how long the embedded warp took to answer a heartbeat
	// (it credits activity at its own clock minus the age the loop sent).
	seriesServer = "server"
	// seriesJob: how late a background job's CPU bursts ended: a job that
	// cannot get its CPU in time may look idle to the loop.
	seriesJob = "job"
)

// seriesOrder lists the series in report order.
var seriesOrder = []string{seriesInjection, seriesHook, seriesTick, seriesServer, seriesJob}

// timingLog collects the measured latencies of a run, each with the time
// it was measured at.
type timingLog struct {
	mu     sync.Mutex
	series map[string][]timed
}

type timed struct {
	at time.Time
	d  time.Duration
}

func (t *timingLog) add(series string, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.series == nil {
		t.series = map[string][]timed{}
	}
	t.series[series] = append(t.series[series], timed{time.Now(), max(d, 0)})
}

// since returns the latencies of series measured at or after from.
func (t *timingLog) since(series string, from time.Time) []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []time.Duration
	for _, s := range t.series[series] {
		if !s.at.Before(from) {
			out = append(out, s.d)
		}
	}
	return out
}

// jobShape is the CPU pattern of a background job at a scaled interval:
// Burst of CPU at the start of every Period, Duty = Burst/Period of one
// core.
type jobShape struct {
	Burst, Period time.Duration
	Duty          float64
}

// jobFor returns the lightest job the loop still sees as busy on every
// tick at the scaled interval iv. heartbeat.Busy wants, between two
// samples, at least BusyMinCPU of CPU and BusyFraction of the elapsed
// time; samples are one interval ± jitter apart and CPU times are counted
// in 10 ms clock ticks. So every window of (1 - jitter)·iv must hold
// BusyMinCPU + 10 ms and 1.5·BusyFraction of (1 + jitter)·iv: with a period
// of iv/4 such a window holds three whole bursts.
func jobFor(iv time.Duration) jobShape {
	const clockTick = 10 * time.Millisecond
	need := max(heartbeat.BusyMinCPU+clockTick,
		time.Duration(1.5*heartbeat.BusyFraction*(1+heartbeat.DefaultJitter)*float64(iv)))
	s := jobShape{Burst: need / 3, Period: iv / 4}
	s.Duty = float64(s.Burst) / float64(s.Period)
	return s
}

// cpuBudget is the share of the machine background jobs may use at once:
// half its cores, the rest is for the hooks, the loops and warp.
func cpuBudget() float64 { return float64(runtime.NumCPU()) / 2 }

// maxJobDuty is the most of one core a single job may need: above it, a
// job competing with everything else would miss ticks.
const maxJobDuty = 0.5

// feasible checks before a run that the machine can give its background
// jobs the CPU the scaled interval asks for. It returns nil, or the timing
// report of a run that is not started.
func feasible(scale float64, t Timing, plan Plan) *TimingReport {
	iv := time.Duration(float64(t.Interval) / scale)
	job := jobFor(iv)
	peak := plan.BackgroundJobs()
	if peak == 0 {
		return nil
	}
	demand := job.Duty * float64(peak)
	if job.Duty <= maxJobDuty && demand <= cpuBudget() {
		return nil
	}
	tr := &TimingReport{OK: false, JobCPUPercent: round1(100 * job.Duty), BackgroundJobs: peak, Cores: runtime.NumCPU(),
		Series: []TimingSeries{}}
	// The duty grows with the scale while BusyMinCPU dominates; below that,
	// BusyFraction sets a floor no scale goes under.
	floor := jobFor(time.Duration(float64(t.Interval) / MinTimeScale)).Duty
	fit := math.Min(maxJobDuty/job.Duty, cpuBudget()/demand)
	if floor*float64(peak) <= cpuBudget() {
		tr.SuggestedScale = niceScale(scale * fit)
	}
	tr.Detail = fmt.Sprintf("at this scale a heartbeat tick is %s, so a background job must use %.0f %% of a core to look busy to the loop (%s of CPU a tick)",
		iv.Round(time.Millisecond), 100*job.Duty, heartbeat.BusyMinCPU)
	if job.Duty > maxJobDuty {
		tr.Detail += fmt.Sprintf(", more than the %.0f %% one job can count on", 100*maxJobDuty)
	} else {
		tr.Detail += fmt.Sprintf("; the scenario runs up to %d at once, %.1f cores, more than the %.1f (half of %d) this machine can give them",
			peak, demand, cpuBudget(), runtime.NumCPU())
	}
	return tr
}

// TimingReport is the simulator's judgement of its own timing.
type TimingReport struct {
	// OK: the machine kept up with the time scale, the claims are judged.
	OK bool `json:"ok"`
	// ToleranceMs is the base tolerance, wall clock: a quarter of the
	// scaled heartbeat interval (ToleranceS in product seconds). Each
	// series may reach a multiple of it at p95 (TimingSeries.ToleranceMs).
	ToleranceMs float64        `json:"tolerance_ms"`
	ToleranceS  float64        `json:"tolerance_product_s"`
	Series      []TimingSeries `json:"series"`
	// The background jobs: the most at once, the CPU each uses (% of one
	// core), the machine's cores.
	BackgroundJobs int     `json:"background_jobs_peak"`
	JobCPUPercent  float64 `json:"job_cpu_percent"`
	Cores          int     `json:"cores"`
	// Detail says what was too slow; SuggestedScale is a time scale the
	// machine would keep up with (0 when none would: fewer agents).
	Detail         string  `json:"detail,omitempty"`
	SuggestedScale float64 `json:"suggested_time_scale,omitempty"`
}

// TimingSeries is one measured latency of the run, wall clock, and the
// p95 it may reach.
type TimingSeries struct {
	Name        string  `json:"name"`
	What        string  `json:"what"`
	Samples     int     `json:"samples"`
	P50Ms       float64 `json:"p50_ms"`
	P95Ms       float64 `json:"p95_ms"`
	MaxMs       float64 `json:"max_ms"`
	ToleranceMs float64 `json:"tolerance_ms"`
	OK          bool    `json:"ok"`
}

var seriesWhat = map[string]string{
	seriesInjection: "actions ran late against the schedule",
	seriesHook:      "hook execs (gyrum touch-activity) took",
	seriesTick:      "loop heartbeats arrived late beyond interval + jitter",
	seriesServer:    "the embedded warp took to answer a heartbeat",
	seriesJob:       "background jobs' CPU bursts ended late",
}

// seriesSlack is the multiple of the base tolerance (a quarter interval)
// each series may reach at p95. A loop's heartbeat in transit moves what
// the server credits, and a claim excuses a quarter interval of it (so
// does a slow answer: warp credits its own clock minus the age); a job
// burst late by a quarter interval (its period) lands in the next tick.
// An action or a hook that runs late only moves the agent's own activity,
// against a margin of 1.25 intervals between the scenario's longest idle
// gap (10 min) and the staleness limit (15 min): half an interval.
var seriesSlack = map[string]float64{seriesInjection: 2, seriesHook: 2, seriesTick: 1, seriesServer: 1, seriesJob: 1}

// judgeTiming compares the p95 of each series with its tolerance, a
// multiple (seriesSlack) of base; iv is the scaled interval.
func judgeTiming(scale float64, iv, base time.Duration, series map[string][]time.Duration) TimingReport {
	tr := TimingReport{OK: true, ToleranceMs: msf(base), ToleranceS: round1(base.Seconds() * scale), Cores: runtime.NumCPU()}
	fit := math.Inf(1) // the largest share of the scale every series would fit in
	var slow []string
	for _, name := range seriesOrder {
		tol := time.Duration(seriesSlack[name] * float64(base))
		ds := slices.Clone(series[name])
		slices.Sort(ds)
		s := TimingSeries{Name: name, What: seriesWhat[name], Samples: len(ds), ToleranceMs: msf(tol), OK: true}
		if len(ds) > 0 {
			p95 := quantile(ds, 0.95)
			s.P50Ms, s.P95Ms, s.MaxMs = msf(quantile(ds, 0.5)), msf(p95), msf(ds[len(ds)-1])
			if p95 > tol {
				s.OK, tr.OK = false, false
				fit = math.Min(fit, float64(tol)/float64(2*p95))
				slow = append(slow, fmt.Sprintf("%s %s at p95 (%s of product time), over %s", s.What,
					p95.Round(100*time.Microsecond), time.Duration(float64(p95)*scale).Round(time.Second), tol.Round(100*time.Microsecond)))
			}
		}
		tr.Series = append(tr.Series, s)
	}
	if !tr.OK {
		tr.SuggestedScale = niceScale(scale * fit)
		tr.Detail = fmt.Sprintf("%s (the tolerances are a quarter and a half of the %s heartbeat interval)",
			strings.Join(slow, "; "), iv.Round(time.Millisecond))
	}
	return tr
}

// tickLateness returns, for every pair of consecutive heartbeats of one
// loop after from, how much later than interval + jitter the second
// arrived. Pairs that span a warp outage, or follow an answer that makes a
// loop back off (5xx), are left out.
func tickLateness(hbs []Received, iv time.Duration, restarts []Restart, from time.Time) []time.Duration {
	late := time.Duration(float64(iv) * (1 + heartbeat.DefaultJitter))
	var out []time.Duration
	for i := 1; i < len(hbs); i++ {
		h0, h1 := hbs[i-1], hbs[i]
		if h0.Status >= http.StatusInternalServerError || h0.At.Before(from) {
			continue
		}
		spans := false
		for _, rs := range restarts {
			if h0.At.Before(rs.StartedAt) && h1.At.After(rs.StoppedAt) {
				spans = true
			}
		}
		if !spans {
			out = append(out, max(h1.At.Sub(h0.At)-late, 0))
		}
	}
	return out
}

// niceScale rounds a time scale down to a round number (1, 1.5, 2, 3, 4, 5,
// 6 or 8 times a power of ten), at least MinTimeScale.
func niceScale(s float64) float64 {
	if s <= MinTimeScale {
		return MinTimeScale
	}
	p := math.Pow(10, math.Floor(math.Log10(s)))
	best := p
	for _, m := range []float64{1, 1.5, 2, 3, 4, 5, 6, 8} {
		if m*p <= s {
			best = m * p
		}
	}
	return best
}

// quantile returns the q-quantile of sorted ds (nearest rank).
func quantile(ds []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(ds)))) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

func msf(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Millisecond)*10) / 10 }
