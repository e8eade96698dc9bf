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
	if w.Dollar {
		var b strings.Builder
		n := len(w.Args)
		for _, r := range cond {
			if r == '?' {
				n++
				b.WriteString("$" + strconv.Itoa(n))
				continue
			}
			b.WriteRune(r)
		}
		cond = b.String()
	}
	w.Args = append(w.Args, args...)
	w.Conds = append(w.Conds, cond)
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
}
