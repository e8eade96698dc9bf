// Package dashboard is warp's operator view: server-rendered pages
// (html/template, assets embedded with go:embed, no CDN and no build step)
// and the live event stream that updates them.
//
// Pages: GET / (claimed tickets with verdict badges, filters by verdict and
// host, cursor pagination, recently ended tickets, the mode, and the
// charts of charts.go, also served alone as GET /charts), GET
// /tickets/{id} (a ticket, its lease, the lease timeline drawn as SVG —
// also alone at GET /tickets/{id}/timeline, see timeline.go — and its
// events) and GET /hosts
// (v2 adoption per host, and whether activity mode may be switched on).
// GET /v1/events/stream is a text/event-stream fed by the server's writes
// through a Broker; a small embedded script patches the page from it
// without a reload, and without JavaScript the pages refresh themselves
// (<meta http-equiv="refresh"> inside <noscript>).
//
// Every value that came from an agent (titles, hosts, agent labels, PR
// URLs, reasons) reaches the page only through html/template's contextual
// escaping, or through textContent in the script; nothing is marked as
// trusted HTML.
package dashboard

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gyrum-labs/warp/internal/age"
	"github.com/gyrum-labs/warp/internal/apiobserve"
	"github.com/gyrum-labs/warp/internal/handoff"
	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/httpkit"
	"github.com/gyrum-labs/warp/internal/progress"
	"github.com/gyrum-labs/warp/internal/warp"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// Defaults of Config.
const (
	DefaultPageSize    = 50
	MaxPageSize        = 500
	DefaultRecentLimit = 20
	DefaultRefresh     = 15 * time.Second
	// StreamPath is where the event stream is mounted.
	StreamPath = "/v1/events/stream"
)

// Config configures a Dashboard.
type Config struct {
	// PageSize is how many claimed tickets a page shows; DefaultPageSize when zero.
	PageSize int
	// RecentLimit is how many recently ended tickets the main page lists.
	RecentLimit int
	// Refresh is the period of the no-JavaScript page refresh.
	Refresh time.Duration
	// SummaryTTL is how long, on the service clock, the main page's
	// verdict counts are reused across requests; DefaultSummaryTTL when
	// zero, never when negative.
	SummaryTTL time.Duration
	// ChartsTTL is how long, on the service clock, the charts' store
	// tallies are reused across requests; DefaultChartsTTL when zero,
	// never when negative.
	ChartsTTL time.Duration
	// Coalesce, Ping, ClientBuffer and WriteTimeout tune the event stream (see BrokerConfig).
	Coalesce     time.Duration
	Ping         time.Duration
	ClientBuffer int
	WriteTimeout time.Duration
	// Logger receives page and stream errors; discarded when nil.
	Logger *slog.Logger
	// SignOut is where the pages' sign-out button posts to (the server's
	// sign-out route when browsers sign in); no button when empty.
	SignOut string
	// SessionTTL is how long a sign-in lasts, as the sign-in page says.
	SessionTTL time.Duration
}

// Dashboard serves the pages and the event stream of one Service.
type Dashboard struct {
	svc    *warp.Service
	cfg    Config
	log    *slog.Logger
	pages  map[string]*template.Template
	broker *Broker
	assets http.Handler
	// summary caches the verdict counts of the main page.
	summary *summaryCache
	// The charts: store tallies (cached) and the in-memory rings.
	tallies         *talliesCache
	latency, sweeps *ring
	started         time.Time
}

// New returns the dashboard of svc. Start it (the event stream's broker)
// and Close it like any background work.
func New(svc *warp.Service, cfg Config) (*Dashboard, error) {
	if svc == nil {
		return nil, errors.New("dashboard: nil service")
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = DefaultPageSize
	}
	if cfg.PageSize > MaxPageSize {
		return nil, warp.Errorf(warp.ErrInvalid, "dashboard page size %d is over %d", cfg.PageSize, MaxPageSize)
	}
	if cfg.RecentLimit <= 0 {
		cfg.RecentLimit = DefaultRecentLimit
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultRefresh
	}
	if cfg.SummaryTTL == 0 {
		cfg.SummaryTTL = DefaultSummaryTTL
	}
	if cfg.ChartsTTL == 0 {
		cfg.ChartsTTL = DefaultChartsTTL
	}
	d := &Dashboard{svc: svc, cfg: cfg, log: cfg.Logger, summary: &summaryCache{ttl: cfg.SummaryTTL, count: svc.CountVerdicts, now: svc.Now}}
	d.tallies, d.latency, d.sweeps, d.started = &talliesCache{ttl: cfg.ChartsTTL, svc: svc}, &ring{}, &ring{}, svc.Now()
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	var err error
	if d.pages, err = parsePages(); err != nil {
		return nil, err
	}
	d.broker, err = NewBroker(BrokerConfig{
		Load: svc.Ticket, Now: svc.Now, Coalesce: cfg.Coalesce, Ping: cfg.Ping,
		ClientBuffer: cfg.ClientBuffer, WriteTimeout: cfg.WriteTimeout, Logger: d.log,
	})
	if err != nil {
		return nil, err
	}
	sub, err := fs.Sub(assetFS, "assets")
	if err != nil {
		return nil, err
	}
	d.assets = http.StripPrefix("/assets/", http.FileServerFS(sub))
	return d, nil
}

func parsePages() (map[string]*template.Template, error) {
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard: parse layout: %w", err)
	}
	pages := map[string]*template.Template{}
	signin, err := template.New("signin.html").Funcs(funcs).ParseFS(templateFS, "templates/signin.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard: parse signin.html: %w", err)
	}
	pages["signin.html"] = signin
	for _, name := range []string{"index.html", "ticket.html", "hosts.html", "error.html", "confirm.html"} {
		t, err := template.Must(base.Clone()).ParseFS(templateFS, "templates/"+name)
		if err != nil {
			return nil, fmt.Errorf("dashboard: parse %s: %w", name, err)
		}
		pages[name] = t
	}
	// The main page draws the charts; GET /charts serves them alone.
	if _, err := pages["index.html"].ParseFS(templateFS, "templates/charts.html"); err != nil {
		return nil, fmt.Errorf("dashboard: parse charts.html: %w", err)
	}
	charts, err := template.New("charts.html").Funcs(funcs).ParseFS(templateFS, "templates/charts.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard: parse charts.html: %w", err)
	}
	pages["charts.html"] = charts
	chartsPage, err := template.Must(base.Clone()).ParseFS(templateFS, "templates/chartspage.html", "templates/charts.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard: parse chartspage.html: %w", err)
	}
	pages["chartspage.html"] = chartsPage
	return pages, nil
}

// Broker returns the event stream's broker, for writers to Notify.
func (d *Dashboard) Broker() *Broker { return d.broker }

// Start starts the event stream's broker.
func (d *Dashboard) Start(ctx context.Context) error { return d.broker.Start(ctx) }

// Close ends every event stream and stops the broker. Call it before a
// graceful HTTP shutdown, which would otherwise wait for the streams.
func (d *Dashboard) Close() error { return d.broker.Close() }

// Route is one route of the dashboard, for the server that serves it to
// mount behind its own authorisation.
type Route struct {
	// Pattern is the route in http.ServeMux syntax ("GET /hosts").
	Pattern string
	Handler http.Handler
	// Open routes (the static assets) are for anyone who can reach the
	// server. The others are for operators: when the server has tokens
	// they need the admin role (warp serve lets a browser sign in once
	// with an admin token and then hold a session cookie).
	Open bool
	// Action routes take the posts of the action forms: the server lets
	// an admin's session post to them with the session's form token
	// (httpapi.Server.MountAction) and names the operator.
	Action bool
}

// Routes returns the pages, the event stream and the static assets.
func (d *Dashboard) Routes() []Route {
	return []Route{
		{Pattern: "GET /{$}", Handler: http.HandlerFunc(d.index)},
		{Pattern: "GET /tickets/{id}", Handler: http.HandlerFunc(d.ticket)},
		{Pattern: "GET /tickets/{id}/timeline", Handler: http.HandlerFunc(d.timeline)},
		{Pattern: "GET /hosts", Handler: http.HandlerFunc(d.hosts)},
		{Pattern: "GET " + ChartsPath, Handler: http.HandlerFunc(d.charts)},
		{Pattern: "GET /tickets/{id}/release", Handler: d.confirm("release")},
		{Pattern: "POST /tickets/{id}/release", Handler: d.act("release"), Action: true},
		{Pattern: "GET /tickets/{id}/cancel", Handler: d.confirm("cancel")},
		{Pattern: "POST /tickets/{id}/cancel", Handler: d.act("cancel"), Action: true},
		{Pattern: "GET /tickets/{id}/reopen", Handler: d.confirm("reopen")},
		{Pattern: "POST /tickets/{id}/reopen", Handler: d.act("reopen"), Action: true},
		{Pattern: "GET " + StreamPath, Handler: d.broker},
		{Pattern: "GET /assets/", Handler: d.assets, Open: true},
	}
}

// Handler returns the Routes on their own mux, without authorisation: for
// tests and for embedding behind another server's auth.
func (d *Dashboard) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, r := range d.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	return mux
}

// OnHeartbeat feeds an accepted heartbeat (or exit report) to the stream;
// it fits the API server's heartbeat observer.
func (d *Dashboard) OnHeartbeat(o apiobserve.HeartbeatOutcome) {
	if o.Code != "ok" || o.Ticket == "" {
		return
	}
	if o.Exit != "" {
		d.broker.Notify(Notice{Kind: KindExit, Ticket: o.Ticket, Epoch: o.Epoch, Reason: o.Exit})
		return
	}
	d.broker.Notify(Notice{Kind: KindHeartbeat, Ticket: o.Ticket, Epoch: o.Epoch})
}

// OnChange feeds a claim, release, completion, creation or mode change to
// the stream; it fits the API server's change observer.
func (d *Dashboard) OnChange(c apiobserve.Change) {
	n := Notice{Kind: string(c.Kind), Ticket: c.Ticket, Epoch: c.Epoch, Reason: c.Reason}
	if c.Kind == warp.EventModeChanged {
		n.To = c.Mode
	}
	d.broker.Notify(n)
}

// OnSweep feeds a sweep's lapses and verdict changes to the stream; it
// fits expiry.Config.OnSweep.
func (d *Dashboard) OnSweep(res warp.SweepResult) {
	d.sweeps.add(d.svc.Now(), res.Duration)
	for _, l := range res.Lapsed {
		d.broker.Notify(Notice{Kind: KindLapsed, Ticket: l.Ticket, Epoch: l.Epoch, Reason: l.EndReason,
			FallbackExtended: l.FallbackExtended})
	}
	for _, c := range res.VerdictChanges {
		d.broker.Notify(Notice{Kind: KindVerdict, Ticket: c.Ticket, Epoch: c.Epoch, From: string(c.From), To: string(c.To)})
	}
	for _, a := range res.HostAlarms {
		reason := "raised"
		if !a.Raised {
			reason = a.Reason
		}
		d.broker.Notify(Notice{Kind: KindHostAlarm, To: a.Host, Reason: reason})
	}
}

// page is what every page's layout needs.
type page struct {
	Title   string
	Nav     string // "tickets", "hosts", "charts", or "confirm" (an action's page)
	Now     time.Time
	NowMS   int64
	Mode    warp.Mode
	Refresh int // seconds, for the <noscript> refresh
	Stream  string
	Ticket  string // the ticket page's id, for the script
	SignOut string // Config.SignOut
}

func (d *Dashboard) newPage(ctx context.Context, title, nav string) (page, error) {
	now := d.svc.Now()
	mode, err := d.svc.Mode(ctx)
	if err != nil {
		return page{}, fmt.Errorf("read mode: %w", err)
	}
	return page{Title: title, Nav: nav, Now: now, NowMS: now.UnixMilli(), Mode: mode,
		Refresh: int(d.cfg.Refresh.Round(time.Second) / time.Second), Stream: StreamPath, SignOut: d.cfg.SignOut}, nil
}

// rowView is one claimed ticket of the main page.
type rowView struct {
	warp.TicketView
	Agent, Host   string
	Schema        int
	InFlight      string
	ActivityMS    int64
	HeartbeatMS   int64
	ExpiresMS     int64
	ActivityAge   string
	HeartbeatAge  string
	ExpiresIn     string
	ActivityIsHB  bool // v1 or claim only: the heartbeat stands in for activity
	HostFilterURL string
	Fix           string // what to do about the verdict (unwired: run gyrum doctor on the host)
	// SinceMS is when the lease's verdict began (Policy.VerdictSince from
	// its columns), 0 for an active one: SinceAge ago, at SinceUTC.
	SinceMS  int64
	SinceAge string
	Since    time.Time
	// ReleaseURL is the release's confirmation page, for an operator who
	// may act.
	ReleaseURL string
}

func newRowView(v warp.TicketView, now time.Time) rowView {
	return newRowViewWith(v, now, warp.Policy{})
}

// newRowViewWith is newRowView with the verdict's since, which the policy
// decides.
func newRowViewWith(v warp.TicketView, now time.Time, p warp.Policy) rowView {
	r := rowView{TicketView: v}
	if l := v.Lease; l != nil && p != (warp.Policy{}) && l.Held() && v.Verdict != warp.VerdictNone && v.Verdict != warp.VerdictActive {
		if since := p.VerdictSince(*l, v.Verdict); !since.IsZero() {
			r.Since, r.SinceMS, r.SinceAge = since, unixMS(since), FormatAge(now.Sub(since))
		}
	}
	if l := v.Lease; l != nil {
		r.Agent, r.Host, r.Schema, r.InFlight = l.Agent, l.Host, l.SchemaVersion, l.InFlight
		p := warp.ProgressAt(*l)
		r.ActivityMS, r.HeartbeatMS, r.ExpiresMS = unixMS(p), unixMS(l.LastHeartbeatAt), unixMS(l.ExpiresAt)
		r.ActivityAge, r.HeartbeatAge = FormatAge(now.Sub(p)), FormatAge(now.Sub(l.LastHeartbeatAt))
		r.ExpiresIn = FormatUntil(l.ExpiresAt.Sub(now))
		r.ActivityIsHB = l.SchemaVersion != 2
		r.HostFilterURL = "/?" + url.Values{"host": {l.Host}}.Encode()
		if v.Verdict == warp.VerdictUnwired {
			r.Fix = warp.UnwiredFix(l.Host) + ": the activity hook has not fired since the loop started"
		}
	}
	return r
}

// verdictCount is one chip of the main page's summary.
type verdictCount struct {
	Verdict  warp.Verdict
	N        int64
	URL      string
	Selected bool
}

type indexData struct {
	page
	Verdict   warp.Verdict
	Host      string
	Q         string // the search: ticket, agent or host
	Sort      string
	Columns   map[string]column
	Sorted    bool // sorted by something other than creation order
	Capped    bool // sorted among the first MaxPageSize of more matches
	Matches   int  // the rows read to sort
	CanAct    bool
	Counts    []verdictCount
	CountedAt time.Time // service time of the counts (they may be reused briefly)
	Held      int64
	Rows      []rowView
	NextURL   string
	FirstURL  string
	Paged     bool // not on the first page
	Recent    []eventView
	Filtered  bool
	PageSize  int
	Charts    chartsData
	// Blocked are the tickets the attempt cap blocked (warp serve
	// --max-attempts), listed before the claimed ones: each waits for an
	// operator. BlockedMore: there are more than shown.
	Blocked     []blockedView
	BlockedMore bool
}

// blockedView is one blocked ticket of the index page.
type blockedView struct {
	ID, Title, Age string
}

// maxBlockedListed bounds the blocked tickets the index page lists.
const maxBlockedListed = 20

func (d *Dashboard) index(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	data := indexData{Host: q.Get("host"), Q: strings.TrimSpace(q.Get("q")), PageSize: d.cfg.PageSize}
	var err error
	if data.page, err = d.newPage(ctx, "warp · claimed tickets", "tickets"); err != nil {
		d.fail(w, r, err)
		return
	}
	limit, err := d.indexQuery(q, &data)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	cursor := q.Get("cursor")
	next, err := d.indexRows(ctx, &data, limit, cursor)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	indexLinks(&data, q.Get("sort") != "", limit != d.cfg.PageSize, limit, cursor, next)
	if err := d.indexSummary(ctx, &data); err != nil {
		d.fail(w, r, err)
		return
	}
	data.Charts = d.chartsData(ctx)
	d.render(w, r, http.StatusOK, "index.html", data)
}

// indexQuery reads the index's filters (verdict, host), its sort and its
// page size from q into data, and returns the page size.
func (d *Dashboard) indexQuery(q url.Values, data *indexData) (int, error) {
	var err error
	if v := q.Get("verdict"); v != "" {
		if data.Verdict, err = warp.ParseVerdict(v); err != nil {
			return 0, err
		}
	}
	if len(data.Host) > warp.MaxIdentLen {
		return 0, warp.Errorf(warp.ErrInvalid, "host filter is %d bytes, at most %d", len(data.Host), warp.MaxIdentLen)
	}
	limit := d.cfg.PageSize
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageSize {
			return 0, warp.Errorf(warp.ErrInvalid, "limit %q is invalid: want an integer from 1 to %d", v, MaxPageSize)
		}
		limit = n
	}
	data.Sort = q.Get("sort")
	if data.Sort == "" {
		data.Sort = defaultSort(data.Verdict)
	}
	if _, ok := rowOrder[data.Sort]; !ok && data.Sort != SortTicket {
		return 0, warp.Errorf(warp.ErrInvalid, "sort %q is invalid: want ticket, since, activity, heartbeat, expires, agent or host", data.Sort)
	}
	data.Sorted = data.Sort != SortTicket
	return limit, nil
}

// indexRows fills data's rows (a page of the claimed tickets the filters
// select, sorted as asked) and its blocked tickets, and returns the
// cursor of the next page ("" for none).
func (d *Dashboard) indexRows(ctx context.Context, data *indexData, limit int, cursor string) (string, error) {
	lo := warp.ListOptions{State: warp.TicketClaimed, Verdict: data.Verdict, Host: data.Host, Search: data.Q, Cursor: cursor, Limit: limit}
	if data.Sorted {
		// Sorted otherwise than by creation: the first MaxPageSize of the
		// filter, sorted, its first page shown.
		lo.Cursor, lo.Limit = "", MaxPageSize
	}
	list, err := d.svc.ListTickets(ctx, lo)
	if err != nil {
		return "", err
	}
	now := data.Now
	blocked, err := d.svc.ListTickets(ctx, warp.ListOptions{State: warp.TicketBlocked, Limit: maxBlockedListed})
	if err != nil {
		return "", err
	}
	for _, v := range blocked.Tickets {
		data.Blocked = append(data.Blocked, blockedView{ID: v.Ticket.ID, Title: v.Ticket.Title, Age: FormatAge(now.Sub(v.Ticket.UpdatedAt))})
	}
	data.BlockedMore = blocked.NextCursor != ""
	op, hasOp := httpkit.OperatorFrom(ctx)
	data.CanAct = hasOp && op.CanAct
	data.Rows = make([]rowView, len(list.Tickets))
	for i, v := range list.Tickets {
		data.Rows[i] = newRowViewWith(v, now, d.svc.Policy())
		if data.CanAct {
			data.Rows[i].ReleaseURL = actionURL(v.Ticket.ID, "release")
		}
	}
	if data.Sorted {
		sortRows(data.Rows, data.Sort)
		data.Matches, data.Capped = len(data.Rows), list.NextCursor != ""
		list.NextCursor = ""
		if len(data.Rows) > limit {
			data.Rows = data.Rows[:limit]
		}
	}
	return list.NextCursor, nil
}

// indexLinks fills data's column, first-page and next-page links from
// its filters; sortAsked and limitAsked say the query named them.
func indexLinks(data *indexData, sortAsked, limitAsked bool, limit int, cursor, nextCursor string) {
	filter := url.Values{}
	if data.Verdict != "" {
		filter.Set("verdict", string(data.Verdict))
	}
	if data.Host != "" {
		filter.Set("host", data.Host)
	}
	if data.Q != "" {
		filter.Set("q", data.Q)
	}
	if limitAsked {
		filter.Set("limit", strconv.Itoa(limit))
	}
	data.Columns = tableColumns(filter, data.Sort)
	if sortAsked {
		filter.Set("sort", data.Sort)
	}
	data.Filtered = data.Verdict != "" || data.Host != "" || data.Q != ""
	data.FirstURL = "/?" + filter.Encode()
	data.Paged = cursor != "" && !data.Sorted
	if nextCursor != "" {
		next := url.Values{}
		for k, v := range filter {
			next[k] = v
		}
		next.Set("cursor", nextCursor)
		data.NextURL = "/?" + next.Encode()
	}
}

// indexSummary fills data's verdict counts (linked to their filters) and
// the latest ends of leases.
func (d *Dashboard) indexSummary(ctx context.Context, data *indexData) error {
	counts, err := d.summary.get(ctx)
	if err != nil {
		return err
	}
	data.CountedAt = counts.At
	for _, v := range verdicts {
		u := url.Values{"verdict": {string(v)}}
		if data.Host != "" {
			u.Set("host", data.Host)
		}
		n := counts.Counts[v]
		data.Counts = append(data.Counts, verdictCount{Verdict: v, N: n, URL: "/?" + u.Encode(), Selected: v == data.Verdict})
		data.Held += n
	}
	events, err := d.svc.RecentEvents(ctx, []warp.EventKind{warp.EventLapsed, warp.EventReleased, warp.EventCompleted, warp.EventCancelled}, d.cfg.RecentLimit)
	if err != nil {
		return err
	}
	data.Recent = make([]eventView, len(events))
	for i, e := range events {
		data.Recent[i] = newEventView(e, data.Now)
	}
	return nil
}

type ticketData struct {
	page
	View     warp.TicketView
	Row      rowView
	Lease    *warp.Lease
	Events   []eventView
	MoreURL  string
	PRIsLink bool
	Timeline timelineView
	// Actions are what the signed-in admin may do to the ticket; Done
	// what the last one did (?done=).
	Actions []actionLink
	Done    string
	// Attempts are the ticket's leases and what each left, newest first.
	Attempts []attemptView
}

// attemptView is one attempt of the ticket page (internal/handoff's words).
type attemptView struct {
	handoff.Attempt
	StartedAge, EndedAge string
	SnapshotWords        string
}

func newAttemptViews(v warp.TicketView, now time.Time) []attemptView {
	wire := httpapi.FromTicketView(v)
	h := handoff.New(wire, v.Ticket.Epoch+1)
	out := make([]attemptView, len(h.Attempts))
	for i, a := range h.Attempts {
		out[i] = attemptView{Attempt: a, StartedAge: FormatAge(now.Sub(a.StartedAt)), SnapshotWords: handoff.SnapshotWords(a.Attempt)}
		if a.EndedAt != nil {
			out[i].EndedAge = FormatAge(now.Sub(*a.EndedAt))
		}
	}
	return out
}

// timelineLimit is how many events the ticket page shows at once.
const timelineLimit = 500

func (d *Dashboard) ticket(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	var after int64
	if v := r.URL.Query().Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			d.fail(w, r, warp.Errorf(warp.ErrInvalid, "after %q is invalid: want the id of an event", v))
			return
		}
		after = n
	}
	data := ticketData{}
	var err error
	if data.page, err = d.newPage(ctx, "warp · "+id, "tickets"); err != nil {
		d.fail(w, r, err)
		return
	}
	data.page.Ticket = id
	if data.View, err = d.svc.Ticket(ctx, id); err != nil {
		d.fail(w, r, err)
		return
	}
	data.Row = newRowViewWith(data.View, data.Now, d.svc.Policy())
	data.Attempts = newAttemptViews(data.View, data.Now)
	data.Lease = data.View.Lease
	if data.Lease != nil {
		data.PRIsLink = isHTTPURL(data.Lease.PRURL)
	}
	op, ok := httpkit.OperatorFrom(ctx)
	data.Actions = ticketActions(op, ok, data.View)
	data.Done = doneNotice(r.URL.Query().Get("done"), data.View)
	evs, err := d.svc.Events(ctx, id, after, timelineLimit)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data.Events = make([]eventView, len(evs))
	for i, e := range evs {
		data.Events[i] = newEventView(e, data.Now)
	}
	if data.Timeline, err = d.timelineView(r, id); err != nil {
		d.fail(w, r, err)
		return
	}
	if len(evs) == timelineLimit {
		data.MoreURL = "/tickets/" + url.PathEscape(id) + "?after=" + strconv.FormatInt(evs[len(evs)-1].ID, 10)
	}
	d.render(w, r, http.StatusOK, "ticket.html", data)
}

type hostView struct {
	warp.HostAdoption
	LastSeenAge string
	V2Percent   int  // share of v2 heartbeats in the window
	Seen        bool // heartbeated within the window (an adoption line)
	// Leases held, by verdict (each with the claimed tickets' list of
	// the host and verdict), and by what the loops report of the hook.
	Leases                             int
	Verdicts                           []hostVerdict
	HookSeen, HookNotSeen, HookUnknown int
	Alarm                              *alarmView
	FilterURL                          string
}

// hostVerdict is one verdict's count of a host's held leases.
type hostVerdict struct {
	Verdict warp.Verdict
	N       int
	URL     string // the claimed tickets of the host with the verdict
}

// alarmView is one raised host alarm of the hosts page.
type alarmView struct {
	Host     string
	Since    time.Time
	SinceAge string
	Message  string
	Fix      string
	Leases   int
	Stale    int
}

type hostsData struct {
	page
	Verdicts []warp.Verdict // the table's verdict columns
	Alarms   []alarmView
	Alarmed  map[string]bool
	Adoption warp.Adoption
	Hosts    []hostView
	Percent  int // hosts on v2 only
	V1Hosts  []string
	V1More   int // v1 hosts not named (the list is capped)
	V1Total  int
	Window   string // as the page writes durations
	// WindowParam is the window as the window= parameter takes it.
	WindowParam string
	CanSwitch   bool // ready, and not already in activity mode
	// Next is the cursor of the next page of hosts, "" on the last.
	Next string
}

// maxNamedV1Hosts caps the v1 hosts the adoption line names.
const maxNamedV1Hosts = 20

func (d *Dashboard) hosts(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	window := warp.DefaultAdoptionWindow
	if v := r.URL.Query().Get("window"); v != "" {
		dur, err := time.ParseDuration(v)
		if err != nil || dur <= 0 {
			d.fail(w, r, warp.Errorf(warp.ErrInvalid, "window %q is invalid: want a positive Go duration like 24h", v))
			return
		}
		window = dur
	}
	data := hostsData{Window: age.Format(window), WindowParam: window.String(), Verdicts: verdicts[:]}
	limit, cursor, err := httpkit.PageParams(r.URL.Query())
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if data.page, err = d.newPage(ctx, "warp · hosts", "hosts"); err != nil {
		d.fail(w, r, err)
		return
	}
	if data.Adoption, err = d.svc.Adoption(ctx, window); err != nil {
		d.fail(w, r, err)
		return
	}
	data.adoptionSummary()
	a := data.Adoption
	data.CanSwitch = a.ReadyForActivityMode && data.Mode != warp.ModeActivity
	// Every host that holds a lease, heartbeated in the window or is in
	// alarm, as warp hosts prints them: leases by verdict, hook health,
	// adoption, alarm.
	hosts, err := d.svc.Hosts(ctx, window)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data.Alarmed = map[string]bool{}
	for _, h := range hosts {
		if al := h.Alarm; al != nil {
			data.Alarmed[h.Host] = true
			data.Alarms = append(data.Alarms, alarmView{Host: h.Host, Since: al.Since, SinceAge: FormatAge(data.Now.Sub(al.Since)),
				Message: warp.AlarmMessage(h.Host), Fix: warp.UnwiredFix(h.Host), Leases: al.Leases, Stale: al.Stale})
		}
	}
	shown, next := httpkit.Page(hosts, func(h warp.HostStatus) string { return h.Host }, cursor, limit)
	data.Next = next
	for _, h := range shown {
		data.Hosts = append(data.Hosts, data.hostView(h))
	}
	d.render(w, r, http.StatusOK, "hosts.html", data)
}

// adoptionSummary fills data's share of v2 hosts and names the hosts
// still sending v1 (the first maxNamedV1Hosts, then a count).
func (data *hostsData) adoptionSummary() {
	a := data.Adoption
	if a.HostCount > 0 {
		data.Percent = a.V2Hosts * 100 / a.HostCount
	}
	for _, h := range a.Hosts {
		if h.V1Count == 0 {
			continue
		}
		data.V1Total++
		if len(data.V1Hosts) < maxNamedV1Hosts {
			data.V1Hosts = append(data.V1Hosts, h.Host)
		} else {
			data.V1More++
		}
	}
}

// hostView is host h's row: leases by verdict (each linked to its
// filter), hook health, adoption and alarm (data.Alarms filled first).
func (data *hostsData) hostView(h warp.HostStatus) hostView {
	hv := hostView{Leases: h.Leases, HookSeen: h.HookSeen[warp.HookYes], HookNotSeen: h.HookSeen[warp.HookNo],
		HookUnknown: h.HookSeen[warp.HookUnknown], FilterURL: "/?" + url.Values{"host": {h.Host}}.Encode()}
	hv.Host = h.Host
	if ad := h.Adoption; ad != nil {
		hv.HostAdoption, hv.Seen, hv.LastSeenAge = *ad, true, FormatAge(data.Now.Sub(ad.LastSeen))
		if total := ad.V1Count + ad.V2Count; total > 0 {
			hv.V2Percent = int(ad.V2Count * 100 / total)
		}
	}
	for _, v := range verdicts {
		hv.Verdicts = append(hv.Verdicts, hostVerdict{Verdict: v, N: h.Verdicts[v],
			URL: "/?" + url.Values{"host": {h.Host}, "verdict": {string(v)}}.Encode()})
	}
	for i := range data.Alarms {
		if data.Alarms[i].Host == h.Host {
			hv.Alarm = &data.Alarms[i]
		}
	}
	return hv
}

type errorData struct {
	page
	Status  int
	Code    string
	Message string
}

// fail renders err as an HTML page with the status of the error table.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, err error) {
	code, status := httpkit.ErrorStatus(err)
	msg := warp.ErrorMessage(err)
	if status >= 500 {
		if r.Context().Err() == nil {
			d.log.Error("dashboard page failed", "path", r.URL.Path, "status", status, "err", err)
		}
		msg = "internal error; the server log has the detail"
		if status == http.StatusServiceUnavailable {
			msg = "the database is unavailable; retry later"
		}
	}
	now := d.svc.Now()
	data := errorData{page: page{Title: "warp · " + http.StatusText(status), Now: now, NowMS: now.UnixMilli(),
		Refresh: int(d.cfg.Refresh / time.Second), Stream: StreamPath, SignOut: d.cfg.SignOut}, Status: status, Code: code, Message: msg}
	d.render(w, r, status, "error.html", data)
}

type signInData struct {
	Action, Next, Problem, Code, TTL string
	Status                           int
}

// SignInPage renders the sign-in form (it fits httpapi.SignInPage): no
// script, the pages' own style, on the pages' policy. The form posts to
// action with next, the page to go to once signed in; problem, when set,
// says what went wrong, with status and the error code (data-status,
// data-code) on the message.
func (d *Dashboard) SignInPage(action string) func(w http.ResponseWriter, r *http.Request, status int, code, next, problem string) {
	return func(w http.ResponseWriter, r *http.Request, status int, code, next, problem string) {
		ttl := d.cfg.SessionTTL
		if ttl <= 0 {
			ttl = 12 * time.Hour
		}
		data := signInData{Action: action, Next: next, Problem: problem, Status: status, Code: code, TTL: age.Format(ttl)}
		d.renderTemplate(w, status, "signin.html", "signin.html", data)
	}
}

func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	d.renderTemplate(w, status, name, "layout.html", data)
}

func (d *Dashboard) renderTemplate(w http.ResponseWriter, status int, name, root string, data any) {
	var buf bytes.Buffer
	if err := d.pages[name].ExecuteTemplate(&buf, root, data); err != nil {
		d.log.Error("dashboard: render", "page", name, "err", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	// The pages load only their own script and style, and frame nothing.
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// FormatAge writes a duration as every page and command line does
// (internal/age: "42s", "4m12s", "3h05m", "2d03h"). The script's fmtDur
// writes the same.
func FormatAge(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return age.Format(d)
}

// FormatUntil renders the time to an expiry: "in 4m 12s", or "due 3s ago".
func FormatUntil(d time.Duration) string {
	if d < 0 {
		return "due " + FormatAge(-d) + " ago"
	}
	return "in " + FormatAge(d)
}

var funcs = template.FuncMap{
	"utc": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"ms": unixMS,
	"schema": func(v int) string {
		if v == 0 {
			return "—"
		}
		return "v" + strconv.Itoa(v)
	},
	"loopWords": func(l warp.Loop) string { return progress.Words(l.Label, l.Count, l.Error) },
	"orDash": func(s string) string {
		if strings.TrimSpace(s) == "" {
			return "—"
		}
		return s
	},
}
