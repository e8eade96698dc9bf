package dashboard

import (
	"cmp"
	"net/url"
	"slices"
	"strings"

	"github.com/gyrum-labs/warp/internal/warp"
)

// The claimed-tickets table: how long each ticket has had its verdict,
// columns to sort by, a search. Tickets come from the store in creation
// order, a page at a time; sorted by anything else, the table reads up to
// MaxPageSize tickets of the filter in one go, sorts them, and shows the
// first page of them (and says when the filter holds more).

// Sort orders of the claimed-tickets table (?sort=).
const (
	SortTicket    = "ticket"    // creation order, paged
	SortSince     = "since"     // longest in its verdict first; active last
	SortActivity  = "activity"  // oldest activity first
	SortHeartbeat = "heartbeat" // oldest heartbeat first
	SortExpires   = "expires"   // soonest expiry first
	SortAgent     = "agent"
	SortHost      = "host"
)

// stuckVerdicts sort by how long they have lasted unless asked otherwise:
// the ticket stuck the longest is the one to look at first.
var stuckVerdicts = map[warp.Verdict]bool{warp.VerdictStalled: true, warp.VerdictSilent: true,
	warp.VerdictExited: true, warp.VerdictUnwired: true, warp.VerdictLooping: true, warp.VerdictSpinning: true}

// defaultSort is the table's order without ?sort=.
func defaultSort(v warp.Verdict) string {
	if stuckVerdicts[v] {
		return SortSince
	}
	return SortTicket
}

// rowOrder compares two rows under a sort; rows it cannot tell apart keep
// their creation order (the sort is stable).
var rowOrder = map[string]func(a, b rowView) int{
	SortSince: func(a, b rowView) int {
		// Active rows have no since (0): after every other one.
		switch {
		case a.SinceMS == 0 && b.SinceMS == 0:
			return 0
		case a.SinceMS == 0:
			return 1
		case b.SinceMS == 0:
			return -1
		}
		return cmp.Compare(a.SinceMS, b.SinceMS)
	},
	SortActivity:  func(a, b rowView) int { return cmp.Compare(a.ActivityMS, b.ActivityMS) },
	SortHeartbeat: func(a, b rowView) int { return cmp.Compare(a.HeartbeatMS, b.HeartbeatMS) },
	SortExpires:   func(a, b rowView) int { return cmp.Compare(a.ExpiresMS, b.ExpiresMS) },
	SortAgent:     func(a, b rowView) int { return cmp.Compare(strings.ToLower(a.Agent), strings.ToLower(b.Agent)) },
	SortHost:      func(a, b rowView) int { return cmp.Compare(strings.ToLower(a.Host), strings.ToLower(b.Host)) },
}

// sortRows sorts rows by order (SortTicket leaves them as they came).
func sortRows(rows []rowView, order string) {
	if f, ok := rowOrder[order]; ok {
		slices.SortStableFunc(rows, f)
	}
}

// column is one sortable header of the table.
type column struct {
	Label, Sort, URL, Title string
	Active                  bool
}

// tableColumns returns the sortable headers, each linking to the table
// sorted by it with the filters kept.
func tableColumns(filter url.Values, current string) map[string]column {
	cols := map[string]column{}
	for _, c := range []column{
		{Label: "ticket", Sort: SortTicket, Title: "creation order"},
		{Label: "verdict since", Sort: SortSince, Title: "longest in its verdict first"},
		{Label: "agent", Sort: SortAgent},
		{Label: "host", Sort: SortHost},
		{Label: "activity age", Sort: SortActivity, Title: "oldest activity first"},
		{Label: "heartbeat age", Sort: SortHeartbeat, Title: "oldest heartbeat first"},
		{Label: "expires", Sort: SortExpires, Title: "soonest first"},
	} {
		q := url.Values{}
		for k, v := range filter {
			q[k] = v
		}
		q.Set("sort", c.Sort)
		c.URL, c.Active = "/?"+q.Encode(), c.Sort == current
		cols[c.Sort] = c
	}
	return cols
}
