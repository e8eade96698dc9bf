package dashboard

import (
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

// shortTime renders a time of an event's detail as the pages do; the
// zero time (a lease that never showed activity) as nothing.
func shortTime(t time.Time) string {
	if t.IsZero() || t.Unix() <= 0 {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func newEventView(e warp.Event, now time.Time) eventView {
	v := eventView{ID: e.ID, Ticket: e.Ticket, Epoch: e.Epoch, Kind: e.Kind, At: e.At, Age: FormatAge(now.Sub(e.At))}
	switch d := e.Data.(type) {
	case warp.CreatedData:
		v.Title = d.Title
	case warp.ClaimedData:
		v.Agent, v.Host = d.Agent, d.Host
	case warp.FirstV2HeartbeatData:
		v.Host = d.Host
	case warp.ExitReportData:
		v.Exit, v.Host = d.Exit, d.Host
	case warp.LapsedData:
		v.Reason, v.Agent, v.Host = d.Reason, d.Agent, d.Host
		v.Fallback, v.HasFallback = d.FallbackExtended, true
		v.LastActivity, v.LastHeartbeat = shortTime(d.LastActivityAt), shortTime(d.LastHeartbeatAt)
	case warp.ReleasedData:
		v.Reason, v.Agent, v.Host, v.By = d.Reason, d.Agent, d.Host, d.By
	case warp.CompletedData:
		v.PRURL, v.Agent, v.Host, v.By = d.PRURL, d.Agent, d.Host, d.By
		v.PRIsLink = isHTTPURL(v.PRURL)
	case warp.VerdictChangedData:
		v.From, v.To, v.Since, v.Agent, v.Host = string(d.From), string(d.To), shortTime(d.Since), d.Agent, d.Host
	case warp.ModeChangedData:
		v.From, v.To, v.Forced = string(d.From), string(d.To), d.Forced
	case warp.EditedData:
		if d.Title != nil {
			v.Title = *d.Title
		}
		if d.Labels != nil {
			v.Labels = *d.Labels
		}
		v.By = d.By
	case warp.ReopenedData:
		v.From, v.Reason, v.By = string(d.From), d.Reason, d.By
	case warp.CancelledData:
		v.From, v.Reason, v.By = string(d.From), d.Reason, d.By
	case warp.BlockedData:
		v.Reason = d.Reason
	case warp.SnapshotData:
		v.Host = d.Host
	case warp.HostAlarmData:
		v.Host = d.Host
	case warp.HostAlarmClearedData:
		v.Host, v.Reason, v.Since = d.Host, d.Reason, shortTime(d.Since)
	}
	return v
}
