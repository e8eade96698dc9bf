package deploytest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The PromQL of deploy/ is read by a small scanner of its own, so that
// github.com/prometheus/prometheus (the parser, and a very large module)
// stays out of go.mod: promtool, built by .ci/install-promtool, checks the
// syntax. The scanner only needs to tell, in a well-formed expression, the
// metric names, the label matchers and the grouping labels apart from the
// functions, keywords, numbers, durations and strings.

// matcher is one label matcher of a selector: name op "value".
type matcher struct {
	Label, Op, Value string
}

// selector is a metric name with its label matchers.
type selector struct {
	Metric   string
	Matchers []matcher
}

// promqlRefs is what an expression refers to.
type promqlRefs struct {
	Selectors []selector
	// Grouping holds the labels of by, without, on, ignoring,
	// group_left and group_right clauses.
	Grouping []string
}

// Metrics returns the distinct metric names, sorted.
func (r promqlRefs) Metrics() []string {
	var out []string
	for _, s := range r.Selectors {
		if !slices.Contains(out, s.Metric) {
			out = append(out, s.Metric)
		}
	}
	slices.Sort(out)
	return out
}

// promqlFunctions are PromQL's functions and aggregation operators (and
// the start() and end() of the @ modifier): an identifier followed by "("
// must be one of them.
var promqlFunctions = map[string]bool{}

func init() {
	for _, f := range strings.Fields(`
		sum min max avg group stddev stdvar count count_values bottomk topk quantile limitk limit_ratio
		abs absent absent_over_time ceil changes clamp clamp_max clamp_min day_of_month day_of_week
		day_of_year days_in_month delta deriv exp floor histogram_avg histogram_count
		histogram_fraction histogram_quantile histogram_stddev histogram_stdvar histogram_sum
		double_exponential_smoothing holt_winters hour idelta increase info irate label_join
		label_replace ln log10 log2 minute month predict_linear rate resets round scalar sgn sort
		sort_desc sort_by_label sort_by_label_desc sqrt time timestamp vector year
		avg_over_time min_over_time max_over_time sum_over_time count_over_time
		quantile_over_time stddev_over_time stdvar_over_time last_over_time present_over_time
		mad_over_time first_over_time ts_of_max_over_time ts_of_min_over_time ts_of_last_over_time
		acos acosh asin asinh atan atanh cos cosh sin sinh tan tanh deg rad pi start end`) {
		promqlFunctions[f] = true
	}
}

// promqlGrouping are the keywords followed by a list of labels.
var promqlGrouping = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true,
	"group_left": true, "group_right": true}

// promqlKeywords are the identifiers that are neither metrics nor
// functions: binary operators, modifiers and number literals.
var promqlKeywords = map[string]bool{"and": true, "or": true, "unless": true, "atan2": true,
	"bool": true, "offset": true, "start": true, "end": true, "inf": true, "nan": true}

// promqlToken is one lexical token.
type promqlToken struct {
	kind string // "ident", "string", "number", "var", "punct"
	text string
}

// lexPromQL splits an expression into tokens. Grafana variables ($job,
// ${job}, $__rate_interval) are tokens of their own.
func lexPromQL(expr string) ([]promqlToken, error) {
	var toks []promqlToken
	isIdentStart := func(c byte) bool { return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isIdent := func(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#':
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			var b strings.Builder
			for ; j < len(expr) && expr[j] != c; j++ {
				if expr[j] == '\\' && c != '`' && j+1 < len(expr) {
					j++
				}
				b.WriteByte(expr[j])
			}
			if j >= len(expr) {
				return nil, fmt.Errorf("unterminated string at offset %d", i)
			}
			toks = append(toks, promqlToken{"string", b.String()})
			i = j + 1
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(expr) && expr[i+1] >= '0' && expr[i+1] <= '9':
			// Numbers, 1e3, 0x1f and durations (5m, 1h30m).
			j := i
			for j < len(expr) && (isIdent(expr[j]) || expr[j] == '.') {
				j++
			}
			toks = append(toks, promqlToken{"number", expr[i:j]})
			i = j
		case c == '$':
			j := i + 1
			if j < len(expr) && expr[j] == '{' {
				for j < len(expr) && expr[j] != '}' {
					j++
				}
				j++
			} else {
				for j < len(expr) && isIdent(expr[j]) {
					j++
				}
			}
			if j > len(expr) || j == i+1 {
				return nil, fmt.Errorf("bad variable at offset %d", i)
			}
			toks = append(toks, promqlToken{"var", expr[i:j]})
			i = j
		case isIdentStart(c):
			j := i
			for j < len(expr) && isIdent(expr[j]) {
				j++
			}
			toks = append(toks, promqlToken{"ident", expr[i:j]})
			i = j
		default:
			// Two-character operators first.
			if i+1 < len(expr) {
				switch two := expr[i : i+2]; two {
				case "==", "!=", "<=", ">=", "=~", "!~":
					toks = append(toks, promqlToken{"punct", two})
					i += 2
					continue
				}
			}
			if !strings.ContainsRune("(){}[],+-*/%^<>=@:", rune(c)) {
				return nil, fmt.Errorf("unexpected %q at offset %d", c, i)
			}
			toks = append(toks, promqlToken{"punct", string(c)})
			i++
		}
	}
	return toks, nil
}

// parsePromQL returns the selectors and grouping labels of expr. It fails
// on an identifier followed by "(" that is not a PromQL function, on a
// selector without a metric name ({__name__=...}) and on malformed
// matchers or label lists.
func parsePromQL(expr string) (promqlRefs, error) {
	toks, err := lexPromQL(expr)
	if err != nil {
		return promqlRefs{}, err
	}
	var refs promqlRefs
	next := func(i int) (promqlToken, bool) {
		if i < len(toks) {
			return toks[i], true
		}
		return promqlToken{}, false
	}
	isPunct := func(i int, p string) bool { t, ok := next(i); return ok && t.kind == "punct" && t.text == p }
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.kind == "punct" && t.text == "[":
			// A range or subquery: durations and variables only.
			for i++; i < len(toks) && !isPunct(i, "]"); i++ {
			}
			if i >= len(toks) {
				return refs, fmt.Errorf("unclosed [")
			}
		case t.kind == "punct" && t.text == "{":
			return refs, fmt.Errorf("a selector without a metric name: name the metric before {")
		case t.kind != "ident":
		case promqlGrouping[t.text] && isPunct(i+1, "("):
			i += 2
			for ; i < len(toks) && !isPunct(i, ")"); i++ {
				switch tk := toks[i]; {
				case tk.kind == "ident":
					refs.Grouping = append(refs.Grouping, tk.text)
				case tk.kind == "punct" && tk.text == ",":
				default:
					return refs, fmt.Errorf("%q in the label list of %s", tk.text, t.text)
				}
			}
			if i >= len(toks) {
				return refs, fmt.Errorf("unclosed label list of %s", t.text)
			}
		case promqlFunctions[t.text] && i+1 < len(toks) && (toks[i+1].text == "by" || toks[i+1].text == "without"):
			// An aggregation with its grouping first: sum by (a) (x).
		case isPunct(i+1, "("):
			if !promqlFunctions[t.text] {
				return refs, fmt.Errorf("%s( is not a PromQL function", t.text)
			}
		case promqlGrouping[t.text] || promqlKeywords[strings.ToLower(t.text)]:
		default:
			sel := selector{Metric: t.text}
			if isPunct(i+1, "{") {
				i += 2
				for ; i < len(toks) && !isPunct(i, "}"); i++ {
					if isPunct(i, ",") {
						continue
					}
					name, op, val := toks[i], promqlToken{}, promqlToken{}
					if i+2 < len(toks) {
						op, val = toks[i+1], toks[i+2]
					}
					if name.kind != "ident" || op.kind != "punct" || !slices.Contains([]string{"=", "!=", "=~", "!~"}, op.text) || val.kind != "string" {
						return refs, fmt.Errorf("malformed matcher in the selector of %s", t.text)
					}
					if name.text == "__name__" {
						return refs, fmt.Errorf("%s: a __name__ matcher hides the metric name", t.text)
					}
					sel.Matchers = append(sel.Matchers, matcher{name.text, op.text, val.text})
					i += 2
				}
				if i >= len(toks) {
					return refs, fmt.Errorf("unclosed selector of %s", t.text)
				}
			}
			refs.Selectors = append(refs.Selectors, sel)
		}
	}
	return refs, nil
}

func TestParsePromQL(t *testing.T) {
	for _, c := range []struct {
		expr     string
		metrics  []string
		grouping []string
		matchers []matcher
	}{
		{expr: `warp_hosts_in_alarm`, metrics: []string{"warp_hosts_in_alarm"}},
		{expr: `max without (instance) (warp_hosts_in_alarm) > 0`,
			metrics: []string{"warp_hosts_in_alarm"}, grouping: []string{"instance"}},
		{expr: `histogram_quantile(0.99, sum by (le, route) (rate(warp_http_request_duration_seconds_bucket{job=~"$job"}[$__rate_interval])))`,
			metrics: []string{"warp_http_request_duration_seconds_bucket"}, grouping: []string{"le", "route"},
			matchers: []matcher{{"job", "=~", "$job"}}},
		{expr: "sum(rate(warp_lapses_total{reason=\"no-heartbeat\", outcome!='ok'}[5m] offset 1d)) / on() group_left sum(warp_sweeps_total) # and not_a_metric",
			metrics:  []string{"warp_lapses_total", "warp_sweeps_total"},
			matchers: []matcher{{"reason", "=", "no-heartbeat"}, {"outcome", "!=", "ok"}}},
		{expr: `sum(x) by (a) and bool y unless z or absent(w) * 1e3 + Inf`,
			metrics: []string{"w", "x", "y", "z"}, grouping: []string{"a"}},
		{expr: `label_replace(up, "a", "$1", "b", "(.*)") > .5`, metrics: []string{"up"}},
		{expr: `max_over_time(warp_mode[1h:5m]) @ start()`, metrics: []string{"warp_mode"}},
	} {
		refs, err := parsePromQL(c.expr)
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		if got := refs.Metrics(); !slices.Equal(got, c.metrics) {
			t.Errorf("%s: metrics %q, want %q", c.expr, got, c.metrics)
		}
		if !slices.Equal(refs.Grouping, c.grouping) {
			t.Errorf("%s: grouping %q, want %q", c.expr, refs.Grouping, c.grouping)
		}
		var ms []matcher
		for _, s := range refs.Selectors {
			ms = append(ms, s.Matchers...)
		}
		if !slices.Equal(ms, c.matchers) {
			t.Errorf("%s: matchers %q, want %q", c.expr, ms, c.matchers)
		}
	}
	for _, bad := range []string{
		`{__name__="warp_mode"}`,
		`warp_mode{__name__="x"}`,
		`rat(warp_sweeps_total[5m])`,
		`warp_mode{mode="transition"`,
		`warp_mode{mode=transition}`,
		`sum by (le, "x") (warp_mode)`,
		`warp_mode{mode="x}`,
		`warp_mode ! 1`,
	} {
		if refs, err := parsePromQL(bad); err == nil {
			t.Errorf("%s: accepted (%+v)", bad, refs)
		}
	}
}
