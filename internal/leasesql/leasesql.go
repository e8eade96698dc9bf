// Package leasesql renders the lease predicates of the domain as SQL, for
// both database adapters (internal/sqlite, internal/postgres). They store
// the lease columns alike — times as unix nanoseconds (0 for none),
// hook_seen and exit as text — so one rendering serves both, and the rule
// it renders is the one warp.VerdictBounds.Match states in Go.
package leasesql

import (
	"strconv"
	"strings"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// Nanos stores a time as unix nanoseconds; the zero time is 0.
func Nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// FromNanos is the inverse of Nanos, in UTC.
func FromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// Where collects the conditions of a WHERE clause with their arguments.
// Conditions are written with ? placeholders; with Dollar (PostgreSQL)
// each becomes $n, numbered in the order arguments are added.
type Where struct {
	Dollar bool
	Conds  []string
	Args   []any
}

// Add appends cond, whose ? placeholders take args in order.
func (w *Where) Add(cond string, args ...any) {
	w.Conds = append(w.Conds, w.Bind(cond, args...))
}

// Bind appends args, the arguments of text's ? placeholders, and returns
// text with them numbered (PostgreSQL) — for SQL outside the WHERE clause
// that comes before it.
func (w *Where) Bind(text string, args ...any) string {
	if w.Dollar {
		var b strings.Builder
		n := len(w.Args)
		for _, r := range text {
			if r == '?' {
				n++
				b.WriteString("$" + strconv.Itoa(n))
				continue
			}
			b.WriteRune(r)
		}
		text = b.String()
	}
	w.Args = append(w.Args, args...)
	return text
}

// Arg appends arg alone (a LIMIT, say) and returns its placeholder.
func (w *Where) Arg(arg any) string {
	w.Args = append(w.Args, arg)
	if w.Dollar {
		return "$" + strconv.Itoa(len(w.Args))
	}
	return "?"
}

// SQL returns " WHERE c1 AND c2 ...", or "" without conditions.
func (w *Where) SQL() string {
	if len(w.Conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.Conds, " AND ")
}

// Bounds adds the conditions of b on the lease alias l (held is the
// caller's condition): the column form of warp.VerdictBounds.Match.
func (w *Where) Bounds(b warp.VerdictBounds) {
	if b.Exited != nil {
		if *b.Exited {
			w.Add("l.exit <> ''")
		} else {
			w.Add("l.exit = ''")
		}
	}
	at := func(col, op string, t time.Time) {
		if !t.IsZero() {
			w.Add("l."+col+" "+op+" ?", Nanos(t))
		}
	}
	at("last_heartbeat_at", "<", b.HeartbeatBefore)
	at("last_heartbeat_at", ">=", b.HeartbeatFrom)
	at("progress_at", "<", b.ProgressBefore)
	at("progress_at", ">=", b.ProgressFrom)
	if b.HookNo != nil {
		if *b.HookNo {
			w.Add("l.hook_seen = 'no'")
		} else {
			w.Add("l.hook_seen <> 'no'")
		}
	}
	at("claimed_at", "<", b.ClaimedBefore)
	if !b.NotUnwiredAt.IsZero() {
		w.Add("(l.hook_seen <> 'no' OR l.claimed_at >= ?)", Nanos(b.NotUnwiredAt))
	}
	if b.Looping != nil {
		if *b.Looping {
			w.Add("l.loop_count > 0")
		} else {
			w.Add("l.loop_count = 0")
		}
	}
	if !b.SpinningBefore.IsZero() {
		w.Add("l.last_progress_at <> 0 AND l.last_progress_at < ?", Nanos(b.SpinningBefore))
	}
	if !b.NotSpinningAt.IsZero() {
		w.Add("(l.last_progress_at = 0 OR l.last_progress_at >= ?)", Nanos(b.NotSpinningAt))
	}
}

// Labels adds the condition that ticket t carries every one of labels:
// PostgreSQL keeps a ticket's labels in its text[] column labels, SQLite
// in the table ticket_labels (one row a label, keyed by ticket and label).
func (w *Where) Labels(labels []string) {
	if len(labels) == 0 {
		return
	}
	if w.Dollar {
		w.Add("t.labels @> ?", labels)
		return
	}
	for _, l := range labels {
		w.Add("EXISTS (SELECT 1 FROM ticket_labels tl WHERE tl.ticket = t.id AND tl.label = ?)", l)
	}
}

// Search adds the condition that ticket t's id, or its lease l's agent
// or host, holds q, whatever the case (LIKE on lower-case text, with q's
// own % and _ escaped); an empty q adds nothing. A ticket without a lease
// matches by its id alone.
func (w *Where) Search(q string) {
	if q == "" {
		return
	}
	esc := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(strings.ToLower(q))
	pat := "%" + esc + "%"
	w.Add(`(lower(t.id) LIKE ? ESCAPE '\' OR lower(l.agent) LIKE ? ESCAPE '\' OR lower(l.host) LIKE ? ESCAPE '\')`, pat, pat, pat)
}

// TicketsQuery is both stores' listing query of f: cols of tickets t and
// leases l, in seq order, after f.AfterSeq, at most limit (each store's
// form of it). By default it walks tickets in seq order (the primary key,
// or tickets_state_seq with a state), each joined to its current lease by
// key. With f.RareVerdict it starts from the held leases recorded with
// that verdict (the partial index leases_held_rare_verdict, which leaves
// active and never-recorded leases out) and those due by f.DueBy
// (leases_held_verdict_due): a superset of the leases whose verdict is
// f.RareVerdict at f.DueBy, which the bounds of f.Verdict narrow to the
// exact ones, sorted by seq. With f.HostFirst it starts from f.Host's held
// leases (leases_held_host). crossJoin (SQLite) keeps that join order.
// Tests check the plans.
func TicketsQuery(f warp.TicketFilter, cols string, dollar, crossJoin bool, limit any) (string, []any) {
	w := Where{Dollar: dollar}
	from := " FROM tickets t LEFT JOIN leases l ON l.ticket = t.id AND l.epoch = t.epoch"
	join := " JOIN "
	if crossJoin {
		join = " CROSS JOIN "
	}
	joined := join + "tickets t ON t.id = c.ticket" + join + "leases l ON l.ticket = t.id AND l.epoch = t.epoch"
	switch {
	case f.RareVerdict != warp.VerdictNone:
		from = " FROM " + w.Bind(`(SELECT ticket FROM leases WHERE state = 'held' AND recorded_verdict = ? AND recorded_verdict NOT IN ('', 'active')
			UNION SELECT ticket FROM leases WHERE state = 'held' AND verdict_due_at > 0 AND verdict_due_at <= ?) c`,
			string(f.RareVerdict), Nanos(f.DueBy)) + joined
	case f.HostFirst && f.Host != "":
		from = " FROM " + w.Bind(`(SELECT ticket FROM leases WHERE state = 'held' AND host = ?) c`, f.Host) + joined
	}
	w.Add("t.seq > ?", f.AfterSeq)
	if f.State != "" {
		w.Add("t.state = ?", string(f.State))
	}
	if f.Host != "" || f.Verdict != nil || f.RareVerdict != warp.VerdictNone {
		w.Add("l.state = 'held'")
	}
	switch {
	case f.Host != "" && crossJoin && !f.HostFirst && f.RareVerdict == warp.VerdictNone:
		// A host that holds much of the fleet: walk the tickets. SQLite
		// would start from the host's leases (leases_held_host) and sort
		// them all for one page (0.8 s at 1M); the unary + keeps it off
		// that index.
		w.Add("+l.host = ?", f.Host)
	case f.Host != "":
		w.Add("l.host = ?", f.Host)
	}
	if f.Verdict != nil {
		w.Bounds(*f.Verdict)
	}
	w.Labels(f.Labels)
	w.Search(f.Search)
	return "SELECT " + cols + from + w.SQL() + " ORDER BY t.seq LIMIT " + w.Arg(limit), w.Args
}
