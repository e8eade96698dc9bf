package deploytest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/warpcli"
	"github.com/gyrum-labs/warp/internal/warpcli/warpclitest"
)

const (
	dashboardFile = "deploy/grafana/warp.json"
	alertsFile    = "deploy/prometheus/warp-alerts.yml"
	alertsTest    = "internal/deploytest/testdata/warp-alerts.test.yml"
	promConfig    = "deploy/prometheus/prometheus.example.yml"
	// runbookBase is where every alert's runbook_url points, followed by
	// the anchor of a heading of docs/OPERATIONS.md.
	runbookBase = "https://github.com/gyrum-labs/warp/blob/main/docs/OPERATIONS.md#"
	// dashboardDS is the datasource every panel and query names: the
	// dashboard's datasource variable.
	dashboardDS = "${DS_PROMETHEUS}"
)

// The alerts issue 35 asks for, and the metrics the dashboard must show.
var (
	wantAlerts = []string{"WarpDown", "WarpHostInAlarm", "WarpStalledShareHigh", "WarpLeasesGoingNowhere", "WarpLapsesByReason",
		"WarpSweepNotRunning", "WarpSweepErrors", "WarpNoV2AdoptionProgress"}
	wantDashboardMetrics = []string{"warp_claimed_leases", "warp_lapses_total", "warp_heartbeats_total",
		"warp_hosts", "warp_hosts_in_alarm", "warp_sweep_duration_seconds_bucket", "warp_sweeps_total",
		"warp_sweep_errors_total", "warp_http_request_duration_seconds_bucket", "warp_mode"}
)

// grafanaDashboard is what the tests rely on of deploy/grafana/warp.json.
type grafanaDashboard struct {
	Title         string `json:"title"`
	UID           string `json:"uid"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Definition string          `json:"definition"`
			Datasource *grafanaDS      `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []grafanaPanel `json:"panels"`
}

type grafanaPanel struct {
	ID         int        `json:"id"`
	Type       string     `json:"type"`
	Title      string     `json:"title"`
	Datasource *grafanaDS `json:"datasource"`
	GridPos    struct {
		X, Y, W, H int
	} `json:"gridPos"`
	Targets []struct {
		RefID        string     `json:"refId"`
		Expr         string     `json:"expr"`
		LegendFormat string     `json:"legendFormat"`
		Datasource   *grafanaDS `json:"datasource"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"` // a collapsed row's
}

type grafanaDS struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// promExpr is one PromQL expression of deploy/ and where it is.
type promExpr struct {
	where, expr string
	// legend holds the label names a Grafana legend ({{name}}) or an
	// alert's annotations ({{ $labels.name }}) show.
	legend []string
}

func loadDashboard(t *testing.T) grafanaDashboard {
	t.Helper()
	var d grafanaDashboard
	if err := json.Unmarshal([]byte(read(t, dashboardFile)), &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// allPanels returns the panels with those of collapsed rows.
func (d grafanaDashboard) allPanels() []grafanaPanel {
	var out []grafanaPanel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

var legendLabel = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)

func (d grafanaDashboard) exprs() []promExpr {
	var out []promExpr
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			e := promExpr{where: fmt.Sprintf("%s: panel %d %q, query %s", dashboardFile, p.ID, p.Title, tg.RefID), expr: tg.Expr}
			for _, m := range legendLabel.FindAllStringSubmatch(tg.LegendFormat, -1) {
				e.legend = append(e.legend, m[1])
			}
			out = append(out, e)
		}
	}
	return out
}

// ruleFile is what the tests rely on of a Prometheus rule file. Unknown
// keys are an error (yaml KnownFields), so "annotation:" cannot pass for
// "annotations:".
type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func decodeYAML(t *testing.T, name, text string, v any) {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func loadAlerts(t *testing.T) ruleFile {
	t.Helper()
	var f ruleFile
	decodeYAML(t, alertsFile, read(t, alertsFile), &f)
	return f
}

var annotationLabel = regexp.MustCompile(`\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)`)

// exprs returns the rules' expressions; an expression's legend holds the
// labels its annotations show ({{ $labels.name }}).
func (f ruleFile) exprs() []promExpr {
	var out []promExpr
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			e := promExpr{where: fmt.Sprintf("%s: %s", alertsFile, r.Alert+r.Record), expr: r.Expr}
			for _, a := range r.Annotations {
				for _, m := range annotationLabel.FindAllStringSubmatch(a, -1) {
					e.legend = append(e.legend, m[1])
				}
			}
			out = append(out, e)
		}
	}
	return out
}

// markdownAnchors returns the anchors GitHub gives the headings of a
// Markdown text (lower case, punctuation dropped, spaces as '-').
func markdownAnchors(text string) map[string]bool {
	out := map[string]bool{}
	inFence := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
			continue
		}
		h, ok := strings.CutPrefix(l, "#")
		if inFence || !ok {
			continue
		}
		h = strings.TrimLeft(h, "#")
		if !strings.HasPrefix(h, " ") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(h)) {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		out[b.String()] = true
	}
	return out
}

func TestGrafanaDashboardParses(t *testing.T) {
	d := loadDashboard(t)
	if d.Title == "" || d.UID == "" {
		t.Errorf("title %q, uid %q: both are needed", d.Title, d.UID)
	}
	if d.SchemaVersion < 36 {
		t.Errorf("schemaVersion %d: the panels are written for Grafana 10+ (36 or more)", d.SchemaVersion)
	}
	var dsVar bool
	for _, v := range d.Templating.List {
		if v.Name == "DS_PROMETHEUS" {
			dsVar = v.Type == "datasource" && string(v.Query) == `"prometheus"`
		}
		if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != dashboardDS) {
			t.Errorf("variable %s: datasource %+v, want uid %s", v.Name, v.Datasource, dashboardDS)
		}
	}
	if !dsVar {
		t.Errorf("no datasource variable DS_PROMETHEUS of type prometheus: panels name %s", dashboardDS)
	}
	panels := d.allPanels()
	if len(panels) < len(wantDashboardMetrics) {
		t.Fatalf("%d panels", len(panels))
	}
	ids := map[int]bool{}
	used := map[string]bool{}
	for _, p := range panels {
		if p.Type == "row" {
			continue
		}
		if ids[p.ID] || p.ID == 0 {
			t.Errorf("panel %q: id %d is 0 or repeated", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.Title == "" || len(p.Targets) == 0 {
			t.Errorf("panel %d: title %q, %d queries", p.ID, p.Title, len(p.Targets))
		}
		if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != dashboardDS {
			t.Errorf("panel %d %q: datasource %+v, want prometheus %s", p.ID, p.Title, p.Datasource, dashboardDS)
		}
		if g := p.GridPos; g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %d %q: gridPos %+v outside the 24 columns", p.ID, p.Title, g)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" || tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("panel %d %q: query %q with expr %q (empty or repeated)", p.ID, p.Title, tg.RefID, tg.Expr)
			}
			refs[tg.RefID] = true
			if tg.Datasource != nil && tg.Datasource.UID != dashboardDS {
				t.Errorf("panel %d %q, query %s: datasource %+v", p.ID, p.Title, tg.RefID, tg.Datasource)
			}
			r, err := parsePromQL(tg.Expr)
			if err != nil {
				t.Errorf("panel %d %q, query %s: %v", p.ID, p.Title, tg.RefID, err)
			}
			for _, m := range r.Metrics() {
				used[m] = true
			}
		}
	}
	// Panels must not overlap.
	for i, a := range panels {
		for _, b := range panels[i+1:] {
			ga, gb := a.GridPos, b.GridPos
			if ga.X < gb.X+gb.W && gb.X < ga.X+ga.W && ga.Y < gb.Y+gb.H && gb.Y < ga.Y+ga.H {
				t.Errorf("panels %q and %q overlap", a.Title, b.Title)
			}
		}
	}
	for _, m := range wantDashboardMetrics {
		if !used[m] {
			t.Errorf("no panel shows %s", m)
		}
	}
}

func TestAlertRulesParse(t *testing.T) {
	f := loadAlerts(t)
	anchors := markdownAnchors(read(t, "docs/OPERATIONS.md"))
	var names []string
	for _, g := range f.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("group %q with %d rules", g.Name, len(g.Rules))
		}
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("a rule without alert (record %q): this file holds alerts only", r.Record)
				continue
			}
			names = append(names, r.Alert)
			if _, err := parsePromQL(r.Expr); err != nil || strings.TrimSpace(r.Expr) == "" {
				t.Errorf("%s: expr %q: %v", r.Alert, r.Expr, err)
			}
			if d, err := model.ParseDuration(r.For); err != nil || d <= 0 {
				t.Errorf("%s: for %q: give every alert a for of a few minutes (%v)", r.Alert, r.For, err)
			}
			if s := r.Labels["severity"]; !slices.Contains([]string{"critical", "warning", "info"}, s) {
				t.Errorf("%s: severity %q, want critical, warning or info", r.Alert, s)
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("%s: no %s annotation", r.Alert, a)
				}
			}
			anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], runbookBase)
			if !ok || !anchors[anchor] {
				t.Errorf("%s: runbook_url %q is not %s followed by a heading of docs/OPERATIONS.md", r.Alert, r.Annotations["runbook_url"], runbookBase)
			}
		}
	}
	for _, w := range wantAlerts {
		if !slices.Contains(names, w) {
			t.Errorf("no alert %s", w)
		}
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	if len(slices.Compact(sorted)) != len(names) {
		t.Errorf("repeated alert names: %q", names)
	}
}

// exposed is what a warp's /metrics exposes: each series name Prometheus
// would store (a histogram's _bucket, _sum and _count) with its label
// names and the values seen of each.
type exposed map[string]map[string]map[string]bool

// targetLabels are added by Prometheus to every scraped series.
var targetLabels = map[string]bool{"job": true, "instance": true}

func scrapeExposed(t *testing.T, m *warpclitest.Server, token string) exposed {
	t.Helper()
	fams := m.Metrics(t, token)
	out := exposed{}
	add := func(series string, m *dto.Metric, extra ...string) {
		if out[series] == nil {
			out[series] = map[string]map[string]bool{}
		}
		for _, l := range m.GetLabel() {
			if out[series][l.GetName()] == nil {
				out[series][l.GetName()] = map[string]bool{}
			}
			out[series][l.GetName()][l.GetValue()] = true
		}
		for _, e := range extra {
			if out[series][e] == nil {
				out[series][e] = map[string]bool{}
			}
		}
	}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM:
				add(name+"_bucket", m, "le")
				add(name+"_sum", m)
				add(name+"_count", m)
			case dto.MetricType_SUMMARY:
				add(name, m, "quantile")
				add(name+"_sum", m)
				add(name+"_count", m)
			default:
				add(name, m)
			}
		}
	}
	return out
}

// checkAgainst returns what in e does not exist in ex: metrics that are
// not warp's or not exposed, label names no metric of the expression has,
// and matcher values never seen.
func checkAgainst(e promExpr, ex exposed) []string {
	refs, err := parsePromQL(e.expr)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", e.where, err)}
	}
	var problems []string
	labels := map[string]bool{}
	for l := range targetLabels {
		labels[l] = true
	}
	if len(refs.Selectors) == 0 {
		problems = append(problems, fmt.Sprintf("%s: names no metric", e.where))
	}
	for _, s := range refs.Selectors {
		if s.Metric == "up" {
			// Prometheus' own series of each scrape: the target labels alone.
			for _, m := range s.Matchers {
				if !targetLabels[m.Label] {
					problems = append(problems, fmt.Sprintf("%s: up has no label %s (only the scrape's job and instance)", e.where, m.Label))
				}
			}
			continue
		}
		if !strings.HasPrefix(s.Metric, "warp_") {
			problems = append(problems, fmt.Sprintf("%s: %s is not a warp metric", e.where, s.Metric))
			continue
		}
		series, ok := ex[s.Metric]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: %s is not on warp's /metrics", e.where, s.Metric))
			continue
		}
		for l := range series {
			labels[l] = true
		}
		for _, m := range s.Matchers {
			if targetLabels[m.Label] {
				continue
			}
			values, ok := series[m.Label]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: %s has no label %s", e.where, s.Metric, m.Label))
				continue
			}
			if strings.Contains(m.Value, "$") {
				continue // a Grafana variable
			}
			seen := false
			switch m.Op {
			case "=", "!=":
				seen = values[m.Value]
			case "=~", "!~":
				re, err := regexp.Compile("^(?:" + m.Value + ")$")
				if err != nil {
					problems = append(problems, fmt.Sprintf("%s: %s{%s%s%q}: %v", e.where, s.Metric, m.Label, m.Op, m.Value, err))
					continue
				}
				for v := range values {
					seen = seen || re.MatchString(v)
				}
			}
			if !seen {
				var vs []string
				for v := range values {
					vs = append(vs, v)
				}
				sort.Strings(vs)
				problems = append(problems, fmt.Sprintf("%s: %s{%s%s%q} matches none of the values warp exports (%s)",
					e.where, s.Metric, m.Label, m.Op, m.Value, strings.Join(vs, ", ")))
			}
		}
	}
	for _, l := range append(slices.Clone(refs.Grouping), e.legend...) {
		if !labels[l] {
			problems = append(problems, fmt.Sprintf("%s: label %s is on none of its metrics (%s)", e.where, l, strings.Join(refs.Metrics(), ", ")))
		}
	}
	return problems
}

// liveWarpMetrics runs a real warp, drives it through claims, v1 and v2
// heartbeats, an exit report and a sweep that lapses a lease of each
// reason and turns one stalled, and returns what its /metrics exposes then.
func liveWarpMetrics(t *testing.T) exposed {
	t.Helper()
	const admin = "deploytest-admin"
	m := warpclitest.Start(t, func(c *warpcli.ServeConfig) {
		c.Policy.StartupGrace = 0
		c.ReleaseOnExit = false // an exit report's lease lapses (agent-exited), one of the reasons counted
		c.AdminToken = admin
	})
	ctx := context.Background()
	c := m.Client(admin)
	for id, host := range map[string]string{"A": "alpha", "B": "beta", "C": "gamma"} {
		if _, err := c.CreateTicket(ctx, client.CreateTicketRequest{ID: id, Title: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Claim(ctx, id, client.ClaimRequest{Agent: "O", Host: host}); err != nil {
			t.Fatal(err)
		}
	}
	m.Clock.Advance(time.Minute)
	// A: v2, lapses for no activity. B: a v1 loop, lapses for no
	// heartbeat. C: reports its agent's exit.
	if _, err := c.Heartbeat(ctx, client.HeartbeatRequest{SchemaVersion: client.Ptr(2), Ticket: "A", Epoch: 1, Host: "alpha", ActivityAgeS: client.Ptr(0.0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Heartbeat(ctx, client.HeartbeatRequest{Ticket: "B", Host: "beta", Agent: "O"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Heartbeat(ctx, client.HeartbeatRequest{SchemaVersion: client.Ptr(2), Ticket: "C", Epoch: 1, Host: "gamma", ActivityAgeS: client.Ptr(0.0), Exit: "parent-exited"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Heartbeat(ctx, client.HeartbeatRequest{SchemaVersion: client.Ptr(2), Ticket: "NOPE", Epoch: 1, Host: "alpha", ActivityAgeS: client.Ptr(0.0)}); err == nil {
		t.Fatal("a heartbeat for an unknown ticket was accepted")
	}
	// D: claimed later, heartbeats without activity since its claim:
	// active to stalled at the sweep, a verdict change.
	m.Clock.Advance(13 * time.Minute)
	if _, err := c.CreateTicket(ctx, client.CreateTicketRequest{ID: "D", Title: "D"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Claim(ctx, "D", client.ClaimRequest{Agent: "O", Host: "delta"}); err != nil {
		t.Fatal(err)
	}
	m.Clock.Advance(17*time.Minute + time.Second)
	if _, err := c.Heartbeat(ctx, client.HeartbeatRequest{SchemaVersion: client.Ptr(2), Ticket: "D", Epoch: 1, Host: "delta", ActivityAgeS: client.Ptr(17*60 + 1.0)}); err != nil {
		t.Fatal(err)
	}
	res, err := m.Expiry.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m.Ops.OnSweep(res)
	if len(res.Lapsed) != 3 || len(res.VerdictChanges) != 1 {
		t.Fatalf("the sweep lapsed %d leases and changed %d verdicts, want 3 (one per reason) and 1", len(res.Lapsed), len(res.VerdictChanges))
	}
	ex := scrapeExposed(t, m, admin)
	for _, want := range []string{"no-activity", "no-heartbeat", "agent-exited"} {
		if !ex["warp_lapses_total"]["reason"][want] {
			t.Fatalf("warp_lapses_total has no reason %q after the sweep: %v", want, ex["warp_lapses_total"])
		}
	}
	return ex
}

// TestExprsUseLiveMetrics checks every metric, label and label value the
// dashboard's queries and the alerts' expressions name against a live
// warp's /metrics.
func TestExprsUseLiveMetrics(t *testing.T) {
	ex := liveWarpMetrics(t)
	exprs := append(loadDashboard(t).exprs(), loadAlerts(t).exprs()...)
	if len(exprs) < 20 {
		t.Fatalf("only %d expressions read from deploy/", len(exprs))
	}
	for _, e := range exprs {
		for _, p := range checkAgainst(e, ex) {
			t.Error(p)
		}
	}
}

// TestExprsUseFreshMetrics checks the same against a warp that has seen
// nothing yet: every metric, label and label value the dashboard and the
// alerts name exists from the first scrape (issue 46: a fresh warp had no
// warp_lapses_total, warp_verdict_changes_total or warp_heartbeats_total
// at all, and four panels said "No data"), as Prometheus' guidance on
// initialising known label values asks.
func TestExprsUseFreshMetrics(t *testing.T) {
	const admin = "deploytest-admin"
	m := warpclitest.Start(t, func(c *warpcli.ServeConfig) { c.AdminToken = admin })
	ex := scrapeExposed(t, m, admin)
	for _, e := range append(loadDashboard(t).exprs(), loadAlerts(t).exprs()...) {
		for _, p := range checkAgainst(e, ex) {
			t.Error(p)
		}
	}
	// What the refused-heartbeats panel and the lapse alert read.
	for name, label := range map[string]string{"warp_heartbeats_total": "outcome", "warp_lapses_total": "reason", "warp_verdict_changes_total": "to"} {
		if len(ex[name][label]) < 3 {
			t.Errorf("%s on a fresh warp: %s values %v, want every known one", name, label, ex[name][label])
		}
	}
}

// TestCheckAgainstCatchesMistakes shows that TestExprsUseLiveMetrics fails
// on each kind of mistake, against the same live warp.
func TestCheckAgainstCatchesMistakes(t *testing.T) {
	ex := liveWarpMetrics(t)
	for _, c := range []struct{ expr, want string }{
		{`warp_sweeps_totl`, "warp_sweeps_totl is not on warp's /metrics"},
		{`up{verdict="stalled"} == 0`, "up has no label verdict"},
		{`process_cpu_seconds_total`, "process_cpu_seconds_total is not a warp metric"},
		{`go_goroutines`, "go_goroutines is not a warp metric"},
		{`warp_sweep_duration_seconds`, "warp_sweep_duration_seconds is not on warp's /metrics"},
		{`warp_claimed_leases{verdicts="stalled"}`, "has no label verdicts"},
		{`warp_claimed_leases{verdict="stuck"}`, `matches none of the values`},
		{`warp_lapses_total{reason=~"no-heartbeats|timeout"}`, `matches none of the values`},
		{`sum by (reasons) (warp_lapses_total)`, "label reasons is on none of its metrics"},
		{`histogram_quantile(0.9, sum by (le) (rate(warp_sweeps_total[5m])))`, "label le is on none"},
		{`1 + 1`, "names no metric"},
	} {
		problems := strings.Join(checkAgainst(promExpr{where: "test", expr: c.expr}, ex), "\n")
		if !strings.Contains(problems, c.want) {
			t.Errorf("%s: got %q, want a problem %q", c.expr, problems, c.want)
		}
	}
	for _, good := range []string{
		`histogram_quantile(0.99, sum by (le) (rate(warp_sweep_duration_seconds_bucket{job=~"$job"}[5m])))`,
		`sum by (reason) (warp_lapses_total{reason!="no-activity"})`,
		`max without (instance) (warp_hosts{schema_version=~"1|other"})`,
		`max without (instance) (up{job=~"warp.*"}) == 0`,
	} {
		if problems := checkAgainst(promExpr{where: "test", expr: good}, ex); len(problems) > 0 {
			t.Errorf("%s: %q", good, problems)
		}
	}
	e := promExpr{where: "test", expr: `max by (verdict) (warp_claimed_leases)`, legend: []string{"reason"}}
	if problems := checkAgainst(e, ex); len(problems) != 1 || !strings.Contains(problems[0], "label reason") {
		t.Errorf("a legend naming a label the query has not: %q", problems)
	}
}

// promtool returns the promtool of $WARP_TEST_PROMTOOL, checked to run. It
// skips without one, except in CI (CI=true), where .ci/run installs it with
// .ci/install-promtool: there, and whenever the variable is set, a promtool
// that cannot run fails the test.
func promtool(t *testing.T) string {
	t.Helper()
	p := os.Getenv("WARP_TEST_PROMTOOL")
	if p == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and WARP_TEST_PROMTOOL is unset: export WARP_TEST_PROMTOOL=\"$(.ci/install-promtool)\" (.ci/run does)")
		}
		t.Skip("WARP_TEST_PROMTOOL is unset: run .ci/install-promtool and export WARP_TEST_PROMTOOL=<the path it prints>")
	}
	out, err := exec.Command(p, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("WARP_TEST_PROMTOOL=%s does not run: %v\n%s", p, err, out)
	}
	return p
}

// runPromtool runs promtool with args in dir and returns its output; it
// fails the test when promtool fails.
func runPromtool(t *testing.T, bin, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

func TestPromtoolCheckRules(t *testing.T) {
	bin := promtool(t)
	n := 0
	for _, g := range loadAlerts(t).Groups {
		n += len(g.Rules)
	}
	out := runPromtool(t, bin, "", "check", "rules", repoFile(t, alertsFile))
	if want := fmt.Sprintf("SUCCESS: %d rules found", n); !strings.Contains(out, want) {
		t.Errorf("promtool check rules: %q, want %q", out, want)
	}
}

// alertTests is what the tests rely on of a promtool rule test file.
type alertTests struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		AlertRuleTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// TestPromtoolTestRules runs the unit tests of the alerts, which must
// expect every alert to fire on some input and not to fire on another.
func TestPromtoolTestRules(t *testing.T) {
	var at alertTests
	dec := yaml.NewDecoder(strings.NewReader(read(t, alertsTest)))
	if err := dec.Decode(&at); err != nil {
		t.Fatalf("%s: %v", alertsTest, err)
	}
	if want := "../../../" + alertsFile; !slices.Equal(at.RuleFiles, []string{want}) {
		t.Errorf("%s: rule_files %q, want [%s]", alertsTest, at.RuleFiles, want)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range at.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	for _, g := range loadAlerts(t).Groups {
		for _, r := range g.Rules {
			if !fires[r.Alert] || !quiet[r.Alert] {
				t.Errorf("%s: %s must test it firing (%v) and not firing (%v)", r.Alert, alertsTest, fires[r.Alert], quiet[r.Alert])
			}
		}
	}
	bin := promtool(t)
	dir := filepath.Dir(repoFile(t, alertsTest))
	out := runPromtool(t, bin, dir, "test", "rules", filepath.Base(alertsTest))
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool test rules: %q", out)
	}
}

// grafanaVars are the values the dashboard's variables take when its
// queries are checked as PromQL.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "${job}", ".*", "$job", ".*")

// TestGrafanaExprsArePromQL writes every query of the dashboard, its
// variables substituted, as a recording rule and has promtool check them.
func TestGrafanaExprsArePromQL(t *testing.T) {
	bin := promtool(t)
	exprs := loadDashboard(t).exprs()
	var b strings.Builder
	b.WriteString("groups:\n  - name: grafana\n    rules:\n")
	for i, e := range exprs {
		expr := grafanaVars.Replace(e.expr)
		if strings.Contains(expr, "$") {
			t.Errorf("%s: a variable the test does not substitute: %s", e.where, e.expr)
		}
		q, err := json.Marshal(expr) // a JSON string is a YAML double-quoted scalar
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "      - record: grafana:query_%d\n        expr: %s\n", i, q)
	}
	path := filepath.Join(t.TempDir(), "grafana-rules.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runPromtool(t, bin, "", "check", "rules", path)
	if want := fmt.Sprintf("SUCCESS: %d rules found", len(exprs)); !strings.Contains(out, want) {
		t.Errorf("promtool check rules: %q, want %q", out, want)
	}
}

// TestPromtoolCheckConfig checks the example Prometheus configuration, with
// the rules file and a token file beside it as its install steps put them.
func TestPromtoolCheckConfig(t *testing.T) {
	bin := promtool(t)
	dir := t.TempDir()
	for _, f := range []string{promConfig, alertsFile} {
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), []byte(read(t, f)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "warp-admin-token"), []byte("token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := runPromtool(t, bin, dir, "check", "config", filepath.Base(promConfig))
	n := 0
	for _, g := range loadAlerts(t).Groups {
		n += len(g.Rules)
	}
	// The rules file it names is read and checked too.
	if want := fmt.Sprintf("SUCCESS: %d rules found", n); !strings.Contains(out, want) {
		t.Errorf("promtool check config: %q, want %q", out, want)
	}
}
