package dashboard

import (
	"fmt"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// eventView is one event as the timeline and the recent list show it. The
// fields are filled from the event's data by kind; the template picks
// what each kind shows.
type eventView struct {
	ID     int64
	Ticket string
	Epoch  int64
	Kind   warp.EventKind
	At     time.Time
	Age    string

	Agent, Host, Title, Reason, Exit, PRURL string
	By, Labels                              string // the operator of a dashboard write; an edit's labels
	From, To                                string // verdicts, or modes
	Since                                   string
	Fallback                                bool // lapsed: the v1 fallback extended the lease
	HasFallback                             bool
	Forced                                  bool
	PRIsLink                                bool
	LastActivity, LastHeartbeat             string
}

func str(data map[string]any, key string) string {
	v, ok := data[key]
	if !ok || v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

func flag(data map[string]any, key string) (value, present bool) {
	v, ok := data[key]
	if !ok {
		return false, false
	}
	b, isBool := v.(bool)
	return isBool && b, isBool
}

// shortTime renders an RFC 3339 time of event data as the pages do.
func shortTime(s string) string {
	if s == "" {
		return ""
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.IsZero() || t.Unix() <= 0 {
		return s
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func newEventView(e warp.Event, now time.Time) eventView {
	d := e.Data
	v := eventView{ID: e.ID, Ticket: e.Ticket, Epoch: e.Epoch, Kind: e.Kind, At: e.At, Age: FormatAge(now.Sub(e.At)),
		Agent: str(d, "agent"), Host: str(d, "host"), Title: str(d, "title"), Reason: str(d, "reason"),
		Exit: str(d, "exit"), PRURL: str(d, "pr_url"), From: str(d, "from"), To: str(d, "to"),
		Since: shortTime(str(d, "since")), LastActivity: shortTime(str(d, "last_activity_at")),
		LastHeartbeat: shortTime(str(d, "last_heartbeat_at")), By: str(d, "by"), Labels: str(d, "labels")}
	v.Fallback, v.HasFallback = flag(d, "fallback_extended")
	v.Forced, _ = flag(d, "forced")
	v.PRIsLink = isHTTPURL(v.PRURL)
	return v
}
