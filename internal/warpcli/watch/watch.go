// Package watch is `warp ticket list --watch` (DESIGN.md section 3,
// Operator commands): the list, then the server's event stream (GET
// /v1/events/stream) applied to it, until a signal. The list is read
// whole (every page), as rows of the stream (client.StreamTicket), so the
// first rows and the rows the stream sends are one shape. On a terminal
// the table is redrawn in place; elsewhere each change is a line; with
// -o json each is a JSON object on a line of its own.
package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/clikit/apiclient"
	"github.com/gyrum-labs/warp/internal/warp"
)

// Snapshot is a line of `warp ticket list --watch -o json` holding
// every ticket of the list: the first line, and again after each re-sync
// (a reconnect, a mode change, a message whose ticket the server could not
// read). A reader replaces what it knew with Tickets.
type Snapshot struct {
	Type    string                `json:"type"`   // "snapshot"
	Reason  string                `json:"reason"` // Start, Reconnected, ...
	Tickets []client.StreamTicket `json:"tickets"`
}

// Update is a line of `warp ticket list --watch -o json` for one
// message of the event stream: the server's message with type "update",
// and InList, for a message that carries a ticket, whether the ticket is
// in the list now (false: it left it).
type Update struct {
	Type string `json:"type"` // "update"
	client.StreamMessage
	InList *bool `json:"in_list,omitempty"`
}

// Reasons of a Snapshot.
const (
	Start       = "start"        // the first list
	Reconnected = "reconnected"  // the stream dropped and came back: changes may have been missed
	ModeChanged = "mode-changed" // every held lease's expiry was recomputed
	Unreadable  = "unreadable"   // the server sent a change without the ticket
	watchOrder  = "order"        // a ticket joined the table: its place (terminal only, no line)
)

// defaultStreamRetry is the wait before a reconnection until the server
// has said (its retry:).
const defaultStreamRetry = 2 * time.Second

// Backoff is how long --watch waits before the attempt-th (1, 2, ...)
// reconnection in a row, given the server's retry: the retry, doubled for
// each failed attempt up to 30 s (or the retry when longer), plus up to a
// quarter more at random, so watchers do not all come back at once.
func Backoff(attempt int, retry time.Duration) time.Duration {
	if retry <= 0 {
		retry = defaultStreamRetry
	}
	limit := max(30*time.Second, retry)
	d := retry
	for i := 1; i < attempt && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	return d + rand.N(d/4+1)
}

// watchFilter is what `ticket list` selects, judged on a row: the
// server's list takes a verdict or a host only of a held lease.
type watchFilter struct{ state, verdict, host string }

func (f watchFilter) match(r client.StreamTicket) bool {
	held := r.State == string(warp.TicketClaimed)
	return (f.state == "" || r.State == f.state) &&
		(f.verdict == "" || held && r.Verdict == f.verdict) &&
		(f.host == "" || held && r.Host == f.host)
}

func (f watchFilter) empty() bool { return f == watchFilter{} }

// flags returns f as the command line gives it.
func (f watchFilter) flags() string {
	var parts []string
	for _, p := range [][2]string{{"--state", f.state}, {"--verdict", f.verdict}, {"--host", f.host}} {
		if p[1] != "" {
			parts = append(parts, p[0]+" "+p[1])
		}
	}
	return strings.Join(parts, " ")
}

// rowOf is t as the event stream carries it (dashboard.RowOf): the
// activity is the lease's progress.
func rowOf(t client.Ticket) client.StreamTicket {
	r := client.StreamTicket{ID: t.ID, Title: t.Title, State: t.State, Epoch: t.Epoch, Verdict: t.Verdict}
	if l := t.Lease; l != nil {
		r.Agent, r.Host, r.SchemaVersion, r.InFlight = l.Agent, l.Host, l.SchemaVersion, l.InFlight
		r.HeartbeatAt = client.UnixMS(l.LastHeartbeatAt)
		r.ActivityAt = client.UnixMS(warp.ProgressAt(warp.Lease{SchemaVersion: l.SchemaVersion,
			LastActivityAt: l.LastActivityAt, LastHeartbeatAt: l.LastHeartbeatAt}))
		if l.State == client.LeaseHeld {
			r.ExpiresAt = client.UnixMS(l.ExpiresAt)
		}
	}
	return r
}

// olderRow reports whether r shows its ticket as it was before known did:
// a message sent before the list was read, arriving after it. A lease
// never comes back once ended, and its heartbeats only move forward.
func olderRow(r, known client.StreamTicket) bool {
	claimed := string(warp.TicketClaimed)
	switch {
	case r.Epoch != known.Epoch:
		return r.Epoch < known.Epoch
	case r.State == claimed && known.State != claimed:
		return known.Epoch > 0
	case r.State == claimed:
		return r.HeartbeatAt < known.HeartbeatAt
	}
	return false
}

// watchSet is the list being watched: its rows in list order.
type watchSet struct {
	filter watchFilter
	ids    []string
	rows   map[string]client.StreamTicket
}

func (s *watchSet) reset(rows []client.StreamTicket) {
	s.ids, s.rows = make([]string, 0, len(rows)), make(map[string]client.StreamTicket, len(rows))
	for _, r := range rows {
		if _, dup := s.rows[r.ID]; !dup {
			s.ids = append(s.ids, r.ID)
		}
		s.rows[r.ID] = r
	}
}

func (s *watchSet) list() []client.StreamTicket {
	out := make([]client.StreamTicket, len(s.ids))
	for i, id := range s.ids {
		out[i] = s.rows[id]
	}
	return out
}

// change is what a message's row did to the list.
type change struct {
	known  bool                // the ticket was in the list
	prev   client.StreamTicket // its row then
	inList bool                // it is in the list now
	stale  bool                // the row is older than the one known: not applied
}

// apply puts r into the list or takes it out, as the filter says. A
// ticket that joins goes last (its place in creation order is unknown).
func (s *watchSet) apply(r client.StreamTicket) change {
	prev, known := s.rows[r.ID]
	if known && olderRow(r, prev) {
		return change{known: true, prev: prev, inList: true, stale: true}
	}
	in := s.filter.match(r)
	switch {
	case in:
		if !known {
			s.ids = append(s.ids, r.ID)
		}
		s.rows[r.ID] = r
	case known:
		delete(s.rows, r.ID)
		s.ids = slices.DeleteFunc(s.ids, func(id string) bool { return id == r.ID })
	}
	return change{known: known, prev: prev, inList: in}
}

// watchView shows the list and its changes.
type watchView interface {
	// snapshot shows the whole list, read again for reason.
	snapshot(reason string, rows []client.StreamTicket) error
	// update shows one message of the stream and what it did to the list.
	update(m client.StreamMessage, ch change) error
	// connection says how the stream is: "" while it runs, else why not.
	connection(state string) error
	// interval is how often tick wants to be called; 0 for never.
	interval() time.Duration
	tick() error
	// ordered says the view shows the list's order, which a ticket that
	// joins it (other than a new one) needs a re-sync to find.
	ordered() bool
	close() error
}

// viewError is a failure to write the output: the watch ends on it.
type viewError struct{ error }

func (e viewError) Unwrap() error { return e.error }

func viewErr(err error) error {
	if err == nil {
		return nil
	}
	return viewError{err}
}

// watcher runs one `ticket list --watch`.
type watcher struct {
	cl      *client.Client
	server  string // cl's URL without a password, for messages
	lo      client.ListOptions
	set     watchSet
	view    watchView
	stderr  io.Writer
	backoff func(attempt int, retry time.Duration) time.Duration
	retry   time.Duration // the server's retry:
}

// Table writes rows as `warp ticket list` shows them, ages from now.
type Table func(w io.Writer, now time.Time, rows []client.StreamTicket) error

// Options are where Run writes and how it paces itself.
type Options struct {
	Stdout, Stderr io.Writer
	// JSON: a Snapshot or an Update a line (-o json).
	JSON bool
	// Term is $TERM: "dumb" makes a terminal get lines, not a redrawn
	// table.
	Term string
	// Now is the clock ages are shown with.
	Now func() time.Time
	// Backoff is the wait before a reconnection (Backoff when nil; tests
	// shorten it).
	Backoff func(attempt int, retry time.Duration) time.Duration
	// Table draws the rows.
	Table Table
}

// Run runs `ticket list --watch` of the tickets lo selects from cl until
// ctx is done (nil: exit 0), the server refuses it or the output cannot
// be written (a clikit failure: exit 1).
func Run(ctx context.Context, cl *client.Client, lo client.ListOptions, o Options) error {
	f := watchFilter{state: lo.State, verdict: lo.Verdict, host: lo.Host}
	server := cl.BaseURL()
	if u, err := url.Parse(server); err == nil {
		server = u.Redacted()
	}
	w := &watcher{cl: cl, server: server, lo: client.ListOptions{State: lo.State, Verdict: lo.Verdict, Host: lo.Host, Limit: warp.MaxListLimit},
		set: watchSet{filter: f}, stderr: o.Stderr, backoff: o.Backoff, retry: defaultStreamRetry}
	if w.backoff == nil {
		w.backoff = Backoff
	}
	switch _, _, isTerm := clikit.TerminalSize(o.Stdout); {
	case o.JSON:
		w.view = &jsonView{w: o.Stdout}
	case isTerm && o.Term != "dumb":
		title := "warp ticket list --watch"
		if f.flags() != "" {
			title += " " + f.flags()
		}
		w.view = &screenView{w: o.Stdout, now: o.Now, rows: w.set.list, table: o.Table,
			height: func() int { _, rows, _ := clikit.TerminalSize(o.Stdout); return rows },
			title:  title + "   " + server}
	default:
		w.view = &logView{w: o.Stdout, now: o.Now, table: o.Table, filtered: !f.empty()}
	}
	return w.run(ctx)
}

// fail marks err as a failure talking to cl's server.
func fail(cl *client.Client, err error) error {
	if err == nil {
		return nil
	}
	return &clikit.Failure{Err: err, Server: cl.BaseURL()}
}

func (w *watcher) run(ctx context.Context) (err error) {
	defer func() {
		if cerr := w.view.close(); err == nil && cerr != nil && ctx.Err() == nil {
			err = fail(w.cl, cerr)
		}
	}()
	st, err := w.connect(ctx)
	if err == nil {
		if err = w.sync(ctx, Start); err != nil {
			st.Close()
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil // a signal before the list was shown
		}
		return w.refused(err)
	}
	for {
		err = w.follow(ctx, st)
		st.Close()
		if ctx.Err() != nil {
			return nil // a signal: the watch is over
		}
		if fatal(err) {
			return fail(w.cl, err)
		}
		if st, err = w.reconnect(ctx, err); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fail(w.cl, err)
		}
	}
}

// refused is the error of a first connection that failed.
func (w *watcher) refused(err error) error {
	var ae *client.APIError
	if errors.As(err, &ae) && !ae.Guessed && ae.Code == client.CodeNotFound {
		return clikit.Failf("%s answered %s with 404: it has no event stream (an older warp?); 'warp ticket list' without --watch works with it", w.server, client.StreamPath)
	}
	return fail(w.cl, err)
}

// fatal reports whether err ends the watch instead of a reconnection:
// the server refuses the token or the request, or the output is gone.
func fatal(err error) bool {
	var ve viewError
	if errors.As(err, &ve) {
		return true
	}
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Guessed {
		return false
	}
	switch ae.Code {
	case client.CodeUnauthorized, client.CodeForbidden, client.CodeNotFound, client.CodeInvalid:
		return true
	}
	return false
}

// connect opens the stream and reads its hello.
func (w *watcher) connect(ctx context.Context) (*client.Stream, error) {
	st, err := w.cl.Stream(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := st.Next(); err != nil { // hello: the server has subscribed this client
		st.Close()
		return nil, err
	}
	if r := st.Retry(); r > 0 {
		w.retry = r
	}
	return st, nil
}

// sync reads the list again and shows it.
func (w *watcher) sync(ctx context.Context, reason string) error {
	tickets, err := w.cl.AllTickets(ctx, w.lo)
	if err != nil {
		return err
	}
	rows := make([]client.StreamTicket, len(tickets))
	for i, t := range tickets {
		rows[i] = rowOf(t)
	}
	w.set.reset(rows)
	return viewErr(w.view.snapshot(reason, w.set.list()))
}

// reconnect waits and connects again until it succeeds (the stream, its
// hello and the list read again), ctx is done or the server refuses.
func (w *watcher) reconnect(ctx context.Context, cause error) (*client.Stream, error) {
	for attempt := 1; ; attempt++ {
		d := w.backoff(attempt, w.retry)
		shown := d.Round(time.Millisecond)
		if d >= time.Second {
			shown = d.Round(100 * time.Millisecond)
		}
		what := "event stream lost"
		if attempt > 1 {
			what = "reconnection failed"
		}
		fmt.Fprintf(w.stderr, "warp: %s (%s); reconnecting in %s\n", what, brief(cause), shown)
		if err := w.view.connection(fmt.Sprintf("reconnecting in %s (%s)", shown, brief(cause))); err != nil {
			return nil, viewErr(err)
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		st, err := w.connect(ctx)
		if err == nil {
			if err = w.view.connection(""); err != nil {
				st.Close()
				return nil, viewErr(err)
			}
			if err = w.sync(ctx, Reconnected); err == nil {
				fmt.Fprintf(w.stderr, "warp: reconnected; the list is read again (%d tickets)\n", len(w.set.ids))
				return st, nil
			}
			st.Close()
		}
		if ctx.Err() != nil || fatal(err) {
			return nil, err
		}
		cause = err
	}
}

// brief is err in a few words, for a line on stderr.
func brief(err error) string {
	var ne *net.OpError
	switch {
	case errors.Is(err, io.EOF):
		return "the server ended it"
	case errors.As(err, &ne) && ne.Err != nil:
		return clikit.Clean(ne.Err.Error())
	}
	return clikit.Clean(apiclient.Message(err))
}

// orderDelay is how long a terminal waits, after a ticket joined the
// list, before it reads the list again to put the ticket in its place:
// the tickets that join together are placed with one read.
const orderDelay = 500 * time.Millisecond

// follow applies the stream's messages until it ends (its error), a
// re-sync fails (that error), the output fails or ctx is done (nil).
func (w *watcher) follow(ctx context.Context, st *client.Stream) error {
	done := make(chan struct{})
	defer close(done)
	msgs, errc := readStream(st, done)
	var ticks <-chan time.Time
	if d := w.view.interval(); d > 0 {
		t := time.NewTicker(d)
		defer t.Stop()
		ticks = t.C
	}
	var order *time.Timer
	var orderC <-chan time.Time
	defer func() {
		if order != nil {
			order.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-msgs:
			if !ok {
				if r := st.Retry(); r > 0 {
					w.retry = r
				}
				return <-errc
			}
			place, err := w.handle(ctx, m)
			if err != nil {
				return err
			}
			if place && orderC == nil {
				order = time.NewTimer(orderDelay)
				orderC = order.C
			}
		case <-ticks:
			if err := w.view.tick(); err != nil {
				return viewErr(err)
			}
		case <-orderC:
			orderC = nil
			if err := w.sync(ctx, watchOrder); err != nil {
				return err
			}
		}
	}
}

// readStream reads st's messages into msgs until it fails (the error on
// errc, msgs closed) or done closes.
func readStream(st *client.Stream, done <-chan struct{}) (<-chan client.StreamMessage, <-chan error) {
	msgs := make(chan client.StreamMessage, 64)
	errc := make(chan error, 1)
	go func() {
		defer close(msgs)
		for {
			m, err := st.Next()
			if err != nil {
				errc <- err
				return
			}
			select {
			case msgs <- m:
			case <-done:
				return
			}
		}
	}()
	return msgs, errc
}

// handle applies one message; place says a ticket joined the list at its
// end, out of its place in an ordered view.
func (w *watcher) handle(ctx context.Context, m client.StreamMessage) (place bool, err error) {
	switch {
	case m.Kind == client.StreamHello:
		return false, nil
	case m.Ticket != nil:
		ch := w.set.apply(*m.Ticket)
		if ch.stale || !ch.known && !ch.inList {
			return false, nil // older than the list, or not about it
		}
		if err := w.view.update(m, ch); err != nil {
			return false, viewErr(err)
		}
		return !ch.known && m.Kind != client.StreamCreated && w.view.ordered(), nil
	case m.ID != "":
		// The server could not read the ticket: read the list.
		if err := w.view.update(m, change{}); err != nil {
			return false, viewErr(err)
		}
		return false, w.sync(ctx, Unreadable)
	case m.Kind == client.StreamModeChanged:
		if err := w.view.update(m, change{}); err != nil {
			return false, viewErr(err)
		}
		return false, w.sync(ctx, ModeChanged)
	}
	return false, viewErr(w.view.update(m, change{})) // a host alarm, or a kind to come
}

// jsonView prints one JSON object a line: Snapshot and Update.
type jsonView struct{ w io.Writer }

func (v *jsonView) line(x any) error {
	b, err := json.Marshal(x)
	if err != nil {
		return err
	}
	_, err = v.w.Write(append(b, '\n'))
	return err
}

func (v *jsonView) snapshot(reason string, rows []client.StreamTicket) error {
	return v.line(Snapshot{Type: "snapshot", Reason: reason, Tickets: rows})
}

func (v *jsonView) update(m client.StreamMessage, ch change) error {
	u := Update{Type: "update", StreamMessage: m}
	if m.Ticket != nil {
		u.InList = &ch.inList
	}
	return v.line(u)
}

func (v *jsonView) connection(string) error { return nil }
func (v *jsonView) interval() time.Duration { return 0 }
func (v *jsonView) tick() error             { return nil }
func (v *jsonView) ordered() bool           { return false }
func (v *jsonView) close() error            { return nil }

// logView prints the table once, then a line per change: for a pipe or a
// file, which cannot be redrawn.
type logView struct {
	w        io.Writer
	now      func() time.Time
	table    Table
	filtered bool // the list has a filter: tickets join and leave it
}

func (v *logView) snapshot(reason string, rows []client.StreamTicket) error {
	if reason != Start {
		if _, err := fmt.Fprintf(v.w, "\n%s list read again (%s): %d tickets\n", clikit.Stamp(v.now()), reason, len(rows)); err != nil {
			return err
		}
	}
	return v.table(v.w, v.now(), rows)
}

func (v *logView) update(m client.StreamMessage, ch change) error {
	if m.Kind == client.StreamHeartbeat && ch.known && ch.inList && sameBesidesTimes(ch.prev, *m.Ticket) {
		return nil // only ages moved: a table would show them, a log line would be noise
	}
	_, err := fmt.Fprintln(v.w, changeLine(m, ch, v.filtered))
	return err
}

func (v *logView) connection(string) error { return nil }
func (v *logView) interval() time.Duration { return 0 }
func (v *logView) tick() error             { return nil }
func (v *logView) ordered() bool           { return false }
func (v *logView) close() error            { return nil }

// sameBesidesTimes reports whether a and b differ in their times alone.
func sameBesidesTimes(a, b client.StreamTicket) bool {
	a.HeartbeatAt, a.ActivityAt, a.ExpiresAt = b.HeartbeatAt, b.ActivityAt, b.ExpiresAt
	return a == b
}

// changeLine is one change as a line: the server's time of it, its kind,
// the ticket and what it is now, then the message's own fields.
func changeLine(m client.StreamMessage, ch change, filtered bool) string {
	parts := []string{clikit.Stamp(client.MSTime(m.Now)), m.Kind}
	if m.ID != "" {
		parts = append(parts, m.ID)
	}
	if t := m.Ticket; t != nil {
		parts = append(parts, kv("state", t.State))
		if t.Verdict != "" {
			parts = append(parts, kv("verdict", t.Verdict))
		}
		parts = append(parts, kv("epoch", strconv.FormatInt(t.Epoch, 10)))
		if t.Agent != "" {
			parts = append(parts, kv("agent", t.Agent))
		}
		if t.Host != "" {
			parts = append(parts, kv("host", t.Host))
		}
		if m.Kind == client.StreamCreated {
			parts = append(parts, kv("title", t.Title))
		}
	}
	if m.Kind == client.StreamHostAlarm {
		parts = append(parts, kv("host", m.To))
	} else {
		if m.From != "" {
			parts = append(parts, kv("from", m.From))
		}
		if m.To != "" {
			parts = append(parts, kv("to", m.To))
		}
	}
	if m.Reason != "" {
		parts = append(parts, kv("reason", m.Reason))
	}
	if m.FallbackExtended {
		parts = append(parts, "fallback_extended=true")
	}
	switch {
	case m.Ticket == nil && m.ID != "":
		parts = append(parts, "(the server could not read it: reading the list again)")
	case m.Ticket != nil && filtered && !ch.known:
		parts = append(parts, "(joins the list)")
	case m.Ticket != nil && filtered && !ch.inList:
		parts = append(parts, "(leaves the list)")
	}
	return clikit.Clean(strings.Join(parts, " "))
}

// kv is key=value, the value quoted when it is empty or has a space, a
// quote or an equals sign.
func kv(k, v string) string {
	if v == "" || strings.ContainsAny(v, " \t\"=") {
		v = strconv.Quote(v)
	}
	return k + "=" + v
}

// Terminal control sequences of screenView.
const (
	escHome       = "\x1b[H"
	escClear      = "\x1b[2J"
	escEraseLine  = "\x1b[K" // the rest of the line
	escEraseBelow = "\x1b[J" // the rest of the screen
	escHideCursor = "\x1b[?25l"
	escShowCursor = "\x1b[?25h"
	escWrapOff    = "\x1b[?7l"
	escWrapOn     = "\x1b[?7h"
)

// Pace of screenView: a burst of changes is drawn at most every
// screenPace, and the ages move every second.
const (
	screenPace  = 100 * time.Millisecond
	screenAging = time.Second
)

// screenView redraws the table in place on a terminal: the cursor goes
// home and each line overwrites the last frame's (erasing what is left of
// it), so nothing is cleared between frames and nothing flickers. Lines
// do not wrap (long ones are cut at the edge) and the table stops at the
// terminal's height, so a frame never scrolls.
type screenView struct {
	w      io.Writer
	now    func() time.Time
	rows   func() []client.StreamTicket
	table  Table
	height func() int // the terminal's rows; 0 when unknown
	title  string
	state  string // the connection's: "" while live
	// wall is the machine's clock, which paces the frames (now is the
	// clock ages are shown with).
	wall     func() time.Time
	started  bool
	dirty    bool
	drawnAt  time.Time
	lastBody []byte
}

func (v *screenView) snapshot(string, []client.StreamTicket) error { return v.change() }
func (v *screenView) update(client.StreamMessage, change) error    { return v.change() }
func (v *screenView) connection(state string) error {
	v.state = state
	return v.change()
}
func (v *screenView) interval() time.Duration { return screenPace }
func (v *screenView) ordered() bool           { return true }

func (v *screenView) clock() time.Time {
	if v.wall != nil {
		return v.wall()
	}
	return time.Now()
}

// change draws at once unless a frame went out within screenPace; tick
// draws it then.
func (v *screenView) change() error {
	v.dirty = true
	if v.clock().Sub(v.drawnAt) < screenPace {
		return nil
	}
	return v.draw()
}

func (v *screenView) tick() error {
	if v.dirty || v.clock().Sub(v.drawnAt) >= screenAging {
		return v.draw()
	}
	return nil
}

// frame returns the lines of the screen. Only the rows that can fit are
// formatted: a list of thousands costs a screenful a frame.
func (v *screenView) frame() []string {
	all := v.rows()
	state := "live"
	if v.state != "" {
		state = v.state
	}
	count := fmt.Sprintf("%d tickets", len(all))
	if len(all) == 1 {
		count = "1 ticket"
	}
	now := v.now()
	head := clikit.Clean(fmt.Sprintf("%s   %s   %s, %s", v.title, clikit.Stamp(now), count, state))
	h := v.height()
	shown := all
	if h > 0 && len(shown) > h {
		shown = shown[:h]
	}
	var tb bytes.Buffer
	_ = v.table(&tb, now, shown)
	lines := append([]string{head, ""}, strings.Split(strings.TrimSuffix(tb.String(), "\n"), "\n")...)
	if h > 1 && len(lines) > h {
		keep := h - 1
		// Above the rows: the head, a blank line, the columns' names.
		more := fmt.Sprintf("… %d more lines", len(lines)-keep)
		if hidden := len(all) - min(len(shown), max(0, keep-3)); hidden > 0 {
			more = fmt.Sprintf("… %d more tickets: narrow the list with --state, --verdict or --host", hidden)
		}
		lines = append(lines[:keep:keep], more)
	}
	return lines
}

func (v *screenView) draw() error {
	var body bytes.Buffer
	for i, l := range v.frame() {
		if i > 0 {
			body.WriteString("\n")
		}
		body.WriteString(l)
		body.WriteString(escEraseLine)
	}
	body.WriteString(escEraseBelow)
	v.dirty, v.drawnAt = false, v.clock()
	if v.started && bytes.Equal(body.Bytes(), v.lastBody) {
		return nil
	}
	out := escHome
	if !v.started {
		out = escHideCursor + escWrapOff + escHome + escClear
	}
	v.started, v.lastBody = true, body.Bytes()
	_, err := io.WriteString(v.w, out+body.String())
	return err
}

// close leaves the last frame on the screen, the cursor below it, shown
// again, and lines wrapping again.
func (v *screenView) close() error {
	if !v.started {
		return nil
	}
	_, err := io.WriteString(v.w, "\n"+escWrapOn+escShowCursor)
	return err
}
