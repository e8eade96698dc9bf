package dashboard

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// The charts of the main page and of GET /charts, drawn as SVG on the
// server (html/template escapes every label; no script draws anything):
//
//   - verdict changes per hour by the verdict they changed to, and lapses
//     per hour by reason: tallies of the stored events (Service.EventTallies);
//   - hosts per hour by schema version (the v2 migration): the hour rows
//     of the heartbeat counts (Service.HostsBySchemaPerHour), since the
//     events do not carry every heartbeat's schema version;
//   - heartbeat request latency and sweep duration per minute: in-memory
//     rings of the last 24 hours, which a restart empties.

// DefaultChartsTTL is how long the charts' store tallies are reused.
const DefaultChartsTTL = 5 * time.Second

// ChartsPath is the route of the charts page and fragment.
const ChartsPath = "/charts"

// chartWindow is the span every chart covers.
const chartWindow = 24 * time.Hour

// heartbeatRoutes are the API routes whose durations the latency chart shows.
var heartbeatRoutes = map[string]bool{"POST /v1/heartbeat": true, "POST /heartbeat": true}

// Chart geometry (SVG user units).
const (
	chartW, chartH                     = 560, 190
	padLeft, padRight, padTop, padBott = 52, 12, 10, 26
	plotW, plotH                       = chartW - padLeft - padRight, chartH - padTop - padBott
)

// ObserveHTTP records an API request's duration for the latency chart; it
// fits httpapi.ServerConfig.Observe. Only heartbeats are kept.
func (d *Dashboard) ObserveHTTP(route string, code int, dur time.Duration) {
	if !heartbeatRoutes[route] {
		return
	}
	d.latency.add(d.svc.Now(), dur)
}

// tallies is what the charts read from the store.
type tallies struct {
	at      time.Time
	events  []warp.EventTally
	schemas []warp.SchemaHour
}

// talliesCache shares the store tallies across viewers for a short while
// (Config.ChartsTTL), as summaryCache does for the counts.
type talliesCache struct {
	ttl  time.Duration
	svc  *warp.Service
	mu   sync.Mutex
	ok   bool
	last tallies
}

func (c *talliesCache) get(ctx context.Context) (tallies, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.svc.Now()
	if c.ok && c.ttl > 0 {
		if age := now.Sub(c.last.at); age >= 0 && age < c.ttl {
			return c.last, nil
		}
	}
	t := tallies{at: now}
	var err error
	if t.events, err = c.svc.EventTallies(ctx, []warp.EventKind{warp.EventVerdictChanged, warp.EventLapsed}, chartWindow); err != nil {
		return t, err
	}
	if t.schemas, err = c.svc.HostsBySchemaPerHour(ctx, chartWindow); err != nil {
		return t, err
	}
	c.ok, c.last = true, t
	return t, nil
}

// chartsData is the charts section.
type chartsData struct {
	Path    string
	At      time.Time
	Charts  []chartView // from the store
	Memory  []chartView // from the in-memory rings
	Started time.Time   // when this process's rings started
	// Problem, when set, says why the charts could not be drawn (the main
	// page shows it instead of failing).
	Problem string
}

// chartView is one chart: an SVG, or the Empty sentence when there is nothing to draw.
type chartView struct {
	ID, Title, Unit, Empty string
	W, H                   int
	X0, Y0, X1, Y1         int // the plot area
	Bars                   []barView
	Lines                  []lineView
	Dots                   []dotView // minutes with no neighbour to draw a line to
	XTicks, YTicks         []tickView
	Legend                 []legendView
}

type barView struct {
	X, Y, W, H float64
	Class      string
	Tip        string
}

type lineView struct {
	Points string
	Class  string
}

type dotView struct {
	X, Y  float64
	Class string
}

type tickView struct {
	Pos   float64
	Label string
}

type legendView struct {
	Class, Label string
	Total        string
}

// ChartsFragment is the query that asks GET /charts for the section
// alone (what charts.js swaps in); without it the charts are a page.
const ChartsFragment = "fragment"

// chartsPageData is the charts page: the layout around the section.
type chartsPageData struct {
	page
	Charts chartsData
}

// charts serves GET /charts: a page of its own (the layout, its title and
// style, the live script) for a browser opening it, or with ?fragment=1
// the charts section alone, for the script to swap in.
func (d *Dashboard) charts(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Has(ChartsFragment) {
		d.renderTemplate(w, http.StatusOK, "charts.html", "charts", d.chartsData(r.Context()))
		return
	}
	data := chartsPageData{}
	var err error
	if data.page, err = d.newPage(r.Context(), "warp · charts", "charts"); err != nil {
		d.fail(w, r, err)
		return
	}
	data.Charts = d.chartsData(r.Context())
	d.render(w, r, http.StatusOK, "chartspage.html", data)
}

// chartsData draws the charts. When the store cannot be read, the
// in-memory charts are still drawn, and Problem says why the others are
// not: the main page's tickets matter more than its charts.
func (d *Dashboard) chartsData(ctx context.Context) chartsData {
	now := d.svc.Now()
	data := chartsData{Path: ChartsPath + "?" + ChartsFragment + "=1", At: now, Started: d.started}
	since := "since this server started at " + data.Started.UTC().Format("15:04Z")
	data.Memory = []chartView{
		lineChart("chart-latency", "Heartbeat request latency per minute", now, d.latency.since(now),
			"No heartbeats "+since+"."),
		lineChart("chart-sweeps", "Sweep duration per minute", now, d.sweeps.since(now),
			"No sweeps "+since+"."),
	}
	t, err := d.tallies.get(ctx)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Error("dashboard charts: read the store", "err", err)
		}
		data.Problem = "The charts of the database could not be read; the server log has the detail."
		return data
	}
	hours := chartHours(now)
	var verdictRows, lapseRows []hourValue
	for _, e := range t.events {
		hv := hourValue{Hour: e.Hour, Key: e.Key, N: float64(e.N)}
		switch e.Kind {
		case warp.EventVerdictChanged:
			verdictRows = append(verdictRows, hv)
		case warp.EventLapsed:
			if hv.Key == "" {
				hv.Key = "unknown"
			}
			lapseRows = append(lapseRows, hv)
		}
	}
	var schemaRows []hourValue
	for _, s := range t.schemas {
		schemaRows = append(schemaRows, hourValue{Hour: s.Hour, Key: "v" + strconv.Itoa(s.SchemaVersion), N: float64(s.Hosts)})
	}
	verdictKeys := make([]string, len(verdicts))
	for i, v := range verdicts {
		verdictKeys[i] = string(v)
	}
	data.Charts = []chartView{
		barChart("chart-verdicts", "Verdict changes per hour, by new verdict", "changes", hours, verdictRows, verdictKeys,
			"No verdict changes in the last 24 h."),
		barChart("chart-lapses", "Lapses per hour, by reason", "lapses", hours, lapseRows,
			[]string{warp.LapseNoHeartbeat, warp.LapseNoActivity, warp.LapseAgentExited},
			"No lapses in the last 24 h."),
		barChart("chart-adoption", "Hosts per hour, by schema version of their heartbeats", "hosts", hours, schemaRows, []string{"v1", "v2"},
			"No heartbeats in the last 24 h."),
	}
	return data
}

// hourValue is one bar segment's data.
type hourValue struct {
	Hour time.Time
	Key  string
	N    float64
}

// chartHours returns the starts of the 24 hours up to now's, oldest first.
func chartHours(now time.Time) []time.Time {
	last := now.UTC().Truncate(time.Hour)
	out := make([]time.Time, 24)
	for i := range out {
		out[i] = last.Add(time.Duration(i-23) * time.Hour)
	}
	return out
}

// seriesClass is the CSS class of a series: its own for the keys the
// stylesheet knows (verdicts, schema versions), else a palette slot.
func seriesClass(key string, i int) string {
	switch key {
	case "active", "stalled", "silent", "exited", "unwired", "v1", "v2", "mean", "max":
		return "c-" + key
	}
	return "s" + strconv.Itoa(i%6)
}

// barChart stacks rows per hour, series in the order of keys (then the
// other keys, sorted).
func barChart(id, title, unit string, hours []time.Time, rows []hourValue, keys []string, empty string) chartView {
	c := newChart(id, title, unit)
	stacks, totals := stackByHour(hours, rows)
	if len(totals) == 0 {
		c.Empty = empty
		return c
	}
	order := orderKeys(keys, totals)
	// A series keeps its colour whichever others are present: the known
	// keys by their place in keys, the others after them.
	slotOf := map[string]int{}
	for i, k := range keys {
		slotOf[k] = i
	}
	for _, k := range order {
		if _, ok := slotOf[k]; !ok {
			slotOf[k] = len(slotOf)
		}
	}
	top := tallest(stacks)
	top, step := scale(top, true)
	slot := float64(plotW) / float64(len(hours))
	for i, s := range stacks {
		y := float64(padTop + plotH)
		for _, key := range order {
			v := s[key]
			if v <= 0 {
				continue
			}
			h := v / top * plotH
			y -= h
			c.Bars = append(c.Bars, barView{X: round1(padLeft + float64(i)*slot + 1), Y: round1(y), W: round1(slot - 2), H: round1(h),
				Class: seriesClass(key, slotOf[key]), Tip: fmt.Sprintf("%s–%s UTC: %s %s", hours[i].Format("15:04"),
					hours[i].Add(time.Hour).Format("15:04"), formatCount(v), key)})
		}
	}
	for i, h := range hours {
		if h.Hour()%3 == 0 {
			c.XTicks = append(c.XTicks, tickView{Pos: round1(padLeft + float64(i)*slot), Label: h.Format("15:04")})
		}
	}
	c.YTicks = yTicks(top, step, formatCount)
	for _, key := range order {
		c.Legend = append(c.Legend, legendView{Class: seriesClass(key, slotOf[key]), Label: key, Total: formatCount(totals[key])})
	}
	return c
}

// stackByHour sums rows into one stack of values by key per hour of
// hours (rows of other hours and non-positive values left out), and
// totals by key.
func stackByHour(hours []time.Time, rows []hourValue) (stacks []map[string]float64, totals map[string]float64) {
	idx := map[int64]int{}
	for i, h := range hours {
		idx[h.Unix()] = i
	}
	totals = map[string]float64{}
	stacks = make([]map[string]float64, len(hours))
	for _, r := range rows {
		i, ok := idx[r.Hour.Unix()]
		if !ok || r.N <= 0 {
			continue
		}
		if stacks[i] == nil {
			stacks[i] = map[string]float64{}
		}
		stacks[i][r.Key] += r.N
		totals[r.Key] += r.N
	}
	return stacks, totals
}

// tallest is the largest sum of one stack.
func tallest(stacks []map[string]float64) float64 {
	top := 0.0
	for _, s := range stacks {
		sum := 0.0
		for _, v := range s {
			sum += v
		}
		top = math.Max(top, sum)
	}
	return top
}

// orderKeys returns the keys of totals: those of first in its order, then
// the others sorted.
func orderKeys(first []string, totals map[string]float64) []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range first {
		if totals[k] > 0 {
			out = append(out, k)
		}
		seen[k] = true
	}
	var rest []string
	for k := range totals {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// lineChart draws the mean and the max of each minute of slots over the
// 24 hours up to now; a minute without a sample breaks the lines.
func lineChart(id, title string, now time.Time, slots []ringSlot, empty string) chartView {
	c := newChart(id, title, "ms")
	if len(slots) == 0 {
		c.Empty = empty
		return c
	}
	top := 0.0
	var n int64
	var sum time.Duration
	for _, s := range slots {
		top = math.Max(top, ms(s.Max))
		n += s.N
		sum += s.Sum
	}
	top, step := scale(top, false)
	start := now.Unix()/60 - ringMinutes + 1 // the first minute shown
	x := func(minute int64) float64 {
		return round1(padLeft + float64(minute-start)*plotW/float64(ringMinutes-1))
	}
	y := func(v float64) float64 { return round1(padTop + plotH - v/top*plotH) }
	for k, series := range []struct {
		key string
		val func(ringSlot) time.Duration
	}{{"max", func(s ringSlot) time.Duration { return s.Max }}, {"mean", ringSlot.Mean}} { // the mean drawn over the max
		var pts [][2]float64
		flush := func() {
			if len(pts) == 1 { // a lone minute: a dot
				c.Dots = append(c.Dots, dotView{X: pts[0][0], Y: pts[0][1], Class: seriesClass(series.key, k)})
			} else if len(pts) > 1 {
				b := make([]string, len(pts))
				for i, p := range pts {
					b[i] = strconv.FormatFloat(p[0], 'f', -1, 64) + "," + strconv.FormatFloat(p[1], 'f', -1, 64)
				}
				c.Lines = append(c.Lines, lineView{Points: strings.Join(b, " "), Class: seriesClass(series.key, k)})
			}
			pts = nil
		}
		prev := int64(-1)
		for _, s := range slots {
			if prev >= 0 && s.Minute != prev+1 {
				flush()
			}
			pts = append(pts, [2]float64{x(s.Minute), y(ms(series.val(s)))})
			prev = s.Minute
		}
		flush()
	}
	for m := start; m <= start+ringMinutes-1; m++ {
		if m%180 == 0 { // every 3 hours on the hour
			c.XTicks = append(c.XTicks, tickView{Pos: x(m), Label: time.Unix(m*60, 0).UTC().Format("15:04")})
		}
	}
	c.YTicks = yTicks(top, step, formatMS)
	c.Legend = []legendView{
		{Class: seriesClass("mean", 0), Label: "mean", Total: formatMS(ms(sum / time.Duration(n)))},
		{Class: seriesClass("max", 1), Label: "max", Total: formatMS(top0(slots))},
	}
	return c
}

func top0(slots []ringSlot) float64 {
	m := 0.0
	for _, s := range slots {
		m = math.Max(m, ms(s.Max))
	}
	return m
}

func newChart(id, title, unit string) chartView {
	return chartView{ID: id, Title: title, Unit: unit, W: chartW, H: chartH,
		X0: padLeft, Y0: padTop, X1: padLeft + plotW, Y1: padTop + plotH}
}

// scale returns the top of the y axis for values up to v and the step
// of its ticks: about four steps of 1, 2 or 5 times a power of ten
// (whole numbers for counts).
func scale(v float64, whole bool) (top, step float64) {
	step = niceCeil(v / 4)
	if whole {
		step = math.Max(1, math.Round(step))
	}
	top = math.Max(step, math.Ceil(v/step-1e-9)*step)
	return top, step
}

// yTicks returns the ticks from 0 to top, step apart.
func yTicks(top, step float64, format func(float64) string) []tickView {
	var out []tickView
	for i := 0; float64(i)*step <= top*(1+1e-9); i++ {
		v := float64(i) * step
		out = append(out, tickView{Pos: round1(padTop + plotH - v/top*plotH), Label: format(v)})
	}
	return out
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func round1(v float64) float64 { return math.Round(v*10) / 10 }

func formatCount(v float64) string {
	if v == math.Trunc(v) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// formatMS renders milliseconds: "0", "0.42 ms", "2.5 ms", "12 ms", "1.5 s".
func formatMS(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 10:
		return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) + " ms"
	case v < 1000:
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64) + " ms"
	}
	return strconv.FormatFloat(v/1000, 'f', 1, 64) + " s"
}
