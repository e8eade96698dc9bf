package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/gyrum-labs/warp/internal/leasesql"
	"github.com/gyrum-labs/warp/internal/warp"
)

// tx is one transaction. Inside Update the whole database is locked for
// writing (BEGIN IMMEDIATE), so "locked for update" and "skipping rows
// other transactions hold" hold trivially.
type tx struct {
	tx    *sql.Tx
	stmts stmtCache
}

var _ warp.Tx = (*tx)(nil)

// nanos and fromNanos store times as the other adapter does (leasesql).
func nanos(t time.Time) int64 { return leasesql.Nanos(t) }

func fromNanos(n int64) time.Time { return leasesql.FromNanos(n) }

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// limitArg turns a non-positive limit into SQLite's "no limit".
func limitArg(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

const ticketCols = `t.seq, t.id, t.title, t.state, t.epoch, t.created_at, t.updated_at,
	(SELECT json_group_array(label) FROM ticket_labels WHERE ticket = t.id)`

type rowScanner interface{ Scan(dest ...any) error }

// ticketRow holds the scanned columns of ticketCols.
type ticketRow struct {
	seq, epoch, created, updated int64
	id, title, state, labels     string
}

func (r *ticketRow) dest() []any {
	return []any{&r.seq, &r.id, &r.title, &r.state, &r.epoch, &r.created, &r.updated, &r.labels}
}

func (r *ticketRow) ticket() (warp.Ticket, error) {
	t := warp.Ticket{ID: r.id, Seq: r.seq, Title: r.title, State: warp.TicketState(r.state), Epoch: r.epoch,
		CreatedAt: fromNanos(r.created), UpdatedAt: fromNanos(r.updated), Labels: []string{}}
	if err := json.Unmarshal([]byte(r.labels), &t.Labels); err != nil {
		return warp.Ticket{}, fmt.Errorf("decode labels of ticket %s: %w", r.id, err)
	}
	// Rows come back in no promised order; the Service stored them sorted.
	sort.Strings(t.Labels)
	return t, nil
}

func scanTicket(s rowScanner) (warp.Ticket, error) {
	var r ticketRow
	if err := s.Scan(r.dest()...); err != nil {
		return warp.Ticket{}, err
	}
	return r.ticket()
}

// leaseCols lists the lease columns in the order leaseRow scans them.
const leaseCols = `l.ticket, l.epoch, l.agent, l.host, l.state, l.claimed_at, l.last_heartbeat_at,
	l.last_activity_at, l.schema_version, l.in_flight, l.first_v2_at, l.refreshed_at, l.expires_at,
	l.exit, l.exited_at, l.ended_at, l.end_reason, l.fallback_extended, l.pr_url,
	l.hook_seen, l.hook_events, l.recorded_verdict, l.claimant, l.secret_hash, l.verdict_due_at,
	l.last_progress_at, l.loop_label, l.loop_count, l.loop_error`

// leaseRow holds nullable lease columns, so a LEFT JOIN that found no
// lease scans too.
type leaseRow struct {
	ticket, agent, host, state, inFlight, exit, endReason, prURL, hookSeen, recordedVerdict sql.Null[string]
	claimant, secretHash, loopLabel, loopError                                              sql.Null[string]

	epoch, claimed, heartbeat, activity, schema, firstV2, refreshed, expires,
	exited, ended, fallback, hookEvents, verdictDue, lastProgress, loopCount sql.Null[int64]
}

func (r *leaseRow) dest() []any {
	return []any{&r.ticket, &r.epoch, &r.agent, &r.host, &r.state, &r.claimed, &r.heartbeat,
		&r.activity, &r.schema, &r.inFlight, &r.firstV2, &r.refreshed, &r.expires,
		&r.exit, &r.exited, &r.ended, &r.endReason, &r.fallback, &r.prURL,
		&r.hookSeen, &r.hookEvents, &r.recordedVerdict, &r.claimant, &r.secretHash, &r.verdictDue,
		&r.lastProgress, &r.loopLabel, &r.loopCount, &r.loopError}
}

func (r *leaseRow) lease() *warp.Lease {
	if !r.ticket.Valid {
		return nil
	}
	return &warp.Lease{
		Ticket: r.ticket.V, Epoch: r.epoch.V, Agent: r.agent.V, Host: r.host.V, State: warp.LeaseState(r.state.V),
		ClaimedAt: fromNanos(r.claimed.V), LastHeartbeatAt: fromNanos(r.heartbeat.V),
		LastActivityAt: fromNanos(r.activity.V), SchemaVersion: int(r.schema.V), InFlight: r.inFlight.V,
		FirstV2At: fromNanos(r.firstV2.V), RefreshedAt: fromNanos(r.refreshed.V), ExpiresAt: fromNanos(r.expires.V),
		Exit: r.exit.V, ExitedAt: fromNanos(r.exited.V), EndedAt: fromNanos(r.ended.V), EndReason: r.endReason.V,
		FallbackExtended: r.fallback.V != 0, PRURL: r.prURL.V,
		HookSeen: warp.HookSeen(r.hookSeen.V), HookEvents: r.hookEvents.V, RecordedVerdict: warp.Verdict(r.recordedVerdict.V),
		Claimant: r.claimant.V, SecretHash: r.secretHash.V, VerdictDueAt: fromNanos(r.verdictDue.V),
		LastProgressAt: fromNanos(r.lastProgress.V), Loop: warp.Loop{Label: r.loopLabel.V, Count: int(r.loopCount.V), Error: r.loopError.V},
	}
}

func scanLease(s rowScanner) (warp.Lease, error) {
	var r leaseRow
	if err := s.Scan(r.dest()...); err != nil {
		return warp.Lease{}, err
	}
	return *r.lease(), nil
}

func (t *tx) CreateTicket(ctx context.Context, tk warp.Ticket) (warp.Ticket, error) {
	err := t.queryRow(ctx, qInsertTicket,
		tk.ID, tk.Title, string(tk.State), tk.Epoch, nanos(tk.CreatedAt), nanos(tk.UpdatedAt)).Scan(&tk.Seq)
	if err != nil {
		return warp.Ticket{}, translate("insert ticket "+tk.ID, err)
	}
	for _, l := range tk.Labels {
		if _, err := t.exec(ctx, qInsertLabel, tk.ID, l); err != nil {
			return warp.Ticket{}, translate("insert label of ticket "+tk.ID, err)
		}
	}
	if tk.Labels == nil {
		tk.Labels = []string{}
	}
	tk.CreatedAt, tk.UpdatedAt = fromNanos(nanos(tk.CreatedAt)), fromNanos(nanos(tk.UpdatedAt))
	return tk, nil
}

func (t *tx) Ticket(ctx context.Context, id string) (warp.Ticket, error) {
	tk, err := scanTicket(t.queryRow(ctx, qTicket, id))
	if err != nil {
		return warp.Ticket{}, translate("read ticket "+id, err)
	}
	return tk, nil
}

func (t *tx) UpdateTicket(ctx context.Context, tk warp.Ticket) error {
	res, err := t.exec(ctx, qUpdateTicket,
		string(tk.State), tk.Epoch, nanos(tk.UpdatedAt), tk.ID)
	if err != nil {
		return translate("update ticket "+tk.ID, err)
	}
	return mustAffect(res, "update ticket "+tk.ID)
}

// EditTicket implements warp.Tx: the title and updated_at in the row, the
// labels replaced in ticket_labels.
func (t *tx) EditTicket(ctx context.Context, tk warp.Ticket) error {
	res, err := t.exec(ctx, `UPDATE tickets SET title = ?, updated_at = ? WHERE id = ?`, tk.Title, nanos(tk.UpdatedAt), tk.ID)
	if err != nil {
		return translate("edit ticket "+tk.ID, err)
	}
	if err := mustAffect(res, "edit ticket "+tk.ID); err != nil {
		return err
	}
	if _, err := t.exec(ctx, `DELETE FROM ticket_labels WHERE ticket = ?`, tk.ID); err != nil {
		return translate("edit labels of ticket "+tk.ID, err)
	}
	for _, l := range tk.Labels {
		if _, err := t.exec(ctx, qInsertLabel, tk.ID, l); err != nil {
			return translate("edit labels of ticket "+tk.ID, err)
		}
	}
	return nil
}

func mustAffect(res sql.Result, op string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return translate(op, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", op, warp.ErrNotFound)
	}
	return nil
}

func (t *tx) NextOpenTicket(ctx context.Context, labels []string) (warp.Ticket, error) {
	args := make([]any, 0, len(labels))
	for _, l := range labels {
		args = append(args, l)
	}
	tk, err := scanTicket(t.queryRow(ctx, nextOpenSQL(len(labels)), args...))
	if err != nil {
		return warp.Ticket{}, translate("next open ticket", err)
	}
	return tk, nil
}

// ticketsSQL builds the listing query of f (leasesql.TicketsQuery).
func ticketsSQL(f warp.TicketFilter) (string, []any) {
	return leasesql.TicketsQuery(f, ticketCols+`, `+leaseCols, false, true, limitArg(f.Limit))
}

func (t *tx) Tickets(ctx context.Context, f warp.TicketFilter) ([]warp.TicketLease, error) {
	query, args := ticketsSQL(f)
	rows, err := t.query(ctx, query, args...)
	if err != nil {
		return nil, translate("list tickets", err)
	}
	defer rows.Close()
	out := []warp.TicketLease{}
	for rows.Next() {
		var tr ticketRow
		var lr leaseRow
		if err := rows.Scan(append(tr.dest(), lr.dest()...)...); err != nil {
			return nil, translate("list tickets", err)
		}
		tk, err := tr.ticket()
		if err != nil {
			return nil, err
		}
		out = append(out, warp.TicketLease{Ticket: tk, Lease: lr.lease()})
	}
	if err := rows.Err(); err != nil {
		return nil, translate("list tickets", err)
	}
	return out, nil
}

func (t *tx) CountTickets(ctx context.Context) (map[warp.TicketState]int64, error) {
	rows, err := t.query(ctx, qCountTickets)
	if err != nil {
		return nil, translate("count tickets", err)
	}
	defer rows.Close()
	out := map[warp.TicketState]int64{}
	for rows.Next() {
		var s string
		var n int64
		if err := rows.Scan(&s, &n); err != nil {
			return nil, translate("count tickets", err)
		}
		out[warp.TicketState(s)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, translate("count tickets", err)
	}
	return out, nil
}

func (t *tx) CurrentLease(ctx context.Context, id string) (warp.Ticket, warp.Lease, error) {
	var tr ticketRow
	var lr leaseRow
	if err := t.queryRow(ctx, qCurrentLease, id).Scan(append(tr.dest(), lr.dest()...)...); err != nil {
		return warp.Ticket{}, warp.Lease{}, translate("read current lease of "+id, err)
	}
	tk, err := tr.ticket()
	if err != nil {
		return warp.Ticket{}, warp.Lease{}, err
	}
	tk.Labels = nil
	return tk, *lr.lease(), nil
}

func (t *tx) Lease(ctx context.Context, ticket string, epoch int64) (warp.Lease, error) {
	l, err := scanLease(t.queryRow(ctx, qLease, ticket, epoch))
	if err != nil {
		return warp.Lease{}, translate(fmt.Sprintf("read lease %s/%d", ticket, epoch), err)
	}
	return l, nil
}

func (t *tx) InsertLease(ctx context.Context, l warp.Lease) error {
	_, err := t.exec(ctx, qInsertLease,
		l.Ticket, l.Epoch, l.Agent, l.Host, string(l.State), nanos(l.ClaimedAt),
		nanos(l.LastHeartbeatAt), nanos(l.LastActivityAt), nanos(warp.ProgressAt(l)), l.SchemaVersion, l.InFlight,
		nanos(l.FirstV2At), nanos(l.RefreshedAt), nanos(l.ExpiresAt), l.Exit, nanos(l.ExitedAt), nanos(l.EndedAt),
		l.EndReason, boolInt(l.FallbackExtended), l.PRURL,
		string(l.HookSeen), l.HookEvents, string(l.RecordedVerdict), l.Claimant, l.SecretHash, nanos(l.VerdictDueAt),
		nanos(l.LastProgressAt), l.Loop.Label, l.Loop.Count, l.Loop.Error)
	if err != nil {
		return translate(fmt.Sprintf("insert lease %s/%d", l.Ticket, l.Epoch), err)
	}
	return nil
}

func (t *tx) UpdateLease(ctx context.Context, l warp.Lease) error {
	op := fmt.Sprintf("update lease %s/%d", l.Ticket, l.Epoch)
	res, err := t.exec(ctx, qUpdateLease,
		l.Agent, l.Host, string(l.State), nanos(l.ClaimedAt),
		nanos(l.LastHeartbeatAt), nanos(l.LastActivityAt), nanos(warp.ProgressAt(l)), l.SchemaVersion, l.InFlight,
		nanos(l.FirstV2At), nanos(l.RefreshedAt), nanos(l.ExpiresAt), l.Exit, nanos(l.ExitedAt), nanos(l.EndedAt),
		l.EndReason, boolInt(l.FallbackExtended), l.PRURL, string(l.HookSeen), l.HookEvents, string(l.RecordedVerdict),
		nanos(l.VerdictDueAt), nanos(l.LastProgressAt), l.Loop.Label, l.Loop.Count, l.Loop.Error, l.Ticket, l.Epoch)
	if err != nil {
		return translate(op, err)
	}
	return mustAffect(res, op)
}

func (t *tx) queryLeases(ctx context.Context, op, query string, args ...any) ([]warp.Lease, error) {
	rows, err := t.query(ctx, query, args...)
	if err != nil {
		return nil, translate(op, err)
	}
	defer rows.Close()
	out := []warp.Lease{}
	for rows.Next() {
		l, err := scanLease(rows)
		if err != nil {
			return nil, translate(op, err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(op, err)
	}
	return out, nil
}

func (t *tx) DueLeases(ctx context.Context, f warp.DueFilter, limit int) ([]warp.Lease, error) {
	args := []any{nanos(f.Now)}
	for _, p := range f.Protect {
		after := int64(-1 << 63) // any expiry
		if !p.ExpiresAfter.IsZero() {
			after = nanos(p.ExpiresAfter)
		}
		args = append(args, nanos(p.RefreshedBefore), after)
	}
	return t.queryLeases(ctx, "due leases", dueLeasesSQL(len(f.Protect)), append(args, limitArg(limit))...)
}

func (t *tx) VerdictDueLeases(ctx context.Context, now time.Time, limit int) ([]warp.Lease, error) {
	return t.queryLeases(ctx, "verdict-due leases", verdictDueSQL, nanos(now), limitArg(limit))
}

func (t *tx) AddVerdictCounts(ctx context.Context, host string, delta map[warp.Verdict]int64) error {
	for _, v := range slices.Sorted(maps.Keys(delta)) { // one order, as on PostgreSQL
		n := delta[v]
		if n == 0 {
			continue
		}
		if _, err := t.exec(ctx, qAddVerdictCount, host, string(v), n); err != nil {
			return translate("count verdicts", err)
		}
	}
	return nil
}

func (t *tx) VerdictCounts(ctx context.Context) ([]warp.HostVerdictCount, error) {
	rows, err := t.query(ctx, qVerdictCounts)
	if err != nil {
		return nil, translate("verdict counts", err)
	}
	defer rows.Close()
	var out []warp.HostVerdictCount
	for rows.Next() {
		var c warp.HostVerdictCount
		var v string
		if err := rows.Scan(&c.Host, &v, &c.N); err != nil {
			return nil, translate("verdict counts", err)
		}
		c.Verdict = warp.Verdict(v)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, translate("verdict counts", err)
	}
	return out, nil
}

// PruneVerdictCounts implements warp.Tx (one writer: no row is held by
// another transaction).
func (t *tx) PruneVerdictCounts(ctx context.Context, limit int) error {
	if _, err := t.exec(ctx, qPruneVerdicts, limitArg(limit)); err != nil {
		return translate("prune verdict counts", err)
	}
	return nil
}

func (t *tx) EndedHosts(ctx context.Context, since time.Time) ([]string, error) {
	rows, err := t.query(ctx, qEndedHosts, nanos(since))
	if err != nil {
		return nil, translate("hosts of ended leases", err)
	}
	defer rows.Close()
	var out []string
	seen := map[string]bool{}
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			return nil, translate("hosts of ended leases", err)
		}
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, translate("hosts of ended leases", err)
	}
	return out, nil
}

func (t *tx) HeldLeases(ctx context.Context, host, after string, limit int) ([]warp.Lease, error) {
	if host != "" {
		return t.queryLeases(ctx, "held leases of a host", qHostHeldLeases, host, after, limitArg(limit))
	}
	return t.queryLeases(ctx, "held leases", qHeldLeases, after, limitArg(limit))
}

func (t *tx) CountHeld(ctx context.Context, vb warp.VerdictBounds) (int64, error) {
	var w leasesql.Where
	w.Add("l.state = 'held'")
	w.Bounds(vb)
	var n int64
	if err := t.queryRow(ctx, `SELECT count(*) FROM leases l`+w.SQL(), w.Args...).Scan(&n); err != nil {
		return 0, translate("count held leases", err)
	}
	return n, nil
}

func (t *tx) AppendEvent(ctx context.Context, e warp.Event) (int64, error) {
	b, err := warp.EncodeEventData(e)
	if err != nil {
		return 0, fmt.Errorf("append event: %w", err)
	}
	var id int64
	err = t.queryRow(ctx, qAppendEvent,
		e.Ticket, e.Epoch, string(e.Kind), nanos(e.At), string(b)).Scan(&id)
	if err != nil {
		return 0, translate("append event", err)
	}
	return id, nil
}

func (t *tx) queryEvents(ctx context.Context, op, query string, args ...any) ([]warp.Event, error) {
	rows, err := t.query(ctx, query, args...)
	if err != nil {
		return nil, translate(op, err)
	}
	defer rows.Close()
	out := []warp.Event{}
	for rows.Next() {
		var e warp.Event
		var kind, data string
		var at int64
		if err := rows.Scan(&e.ID, &e.Ticket, &e.Epoch, &kind, &at, &data); err != nil {
			return nil, translate(op, err)
		}
		e.Kind, e.At = warp.EventKind(kind), fromNanos(at)
		if e.Data, err = warp.DecodeEventData(e.Kind, []byte(data)); err != nil {
			return nil, fmt.Errorf("%s: event %d: %w", op, e.ID, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(op, err)
	}
	return out, nil
}

func (t *tx) Events(ctx context.Context, ticket string, afterID int64, limit int) ([]warp.Event, error) {
	return t.queryEvents(ctx, "events of "+ticket, qEvents, ticket, afterID, limitArg(limit))
}

func (t *tx) RecentEvents(ctx context.Context, kinds []warp.EventKind, limit int) ([]warp.Event, error) {
	if len(kinds) == 0 {
		return t.queryEvents(ctx, "recent events", qRecentEvents, limitArg(limit))
	}
	// One ordered read of the events_kind index (migration 0009) per kind,
	// each stopping at the limit, merged newest first: one query over all
	// the kinds at once reads and sorts every event of them.
	var out []warp.Event
	for _, k := range slices.Compact(slices.Sorted(slices.Values(kinds))) {
		evs, err := t.queryEvents(ctx, "recent events", qRecentEventsOfKind, string(k), limitArg(limit))
		if err != nil {
			return nil, err
		}
		out = append(out, evs...)
	}
	slices.SortFunc(out, func(a, b warp.Event) int { return cmp.Compare(b.ID, a.ID) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// qCountHeartbeatRows adds one heartbeat count to its two rows (a minute's
// and an hour's: warp.CountRows).
var qCountHeartbeatRows = qCountHeartbeats(2)

func (t *tx) RecordHeartbeat(ctx context.Context, c warp.HeartbeatCount) (bool, error) {
	rows := warp.CountRows(c)
	if _, err := t.exec(ctx, qCountHeartbeatRows, appendSum(appendSum(make([]any, 0, 10), rows[0]), rows[1])...); err != nil {
		return false, translate("count heartbeat", err)
	}
	at := nanos(c.At)
	res, err := t.exec(ctx, qNewHost, c.Host, c.Token, c.SchemaVersion, at)
	if err != nil {
		return false, translate("record host", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return true, nil
	}
	if _, err := t.exec(ctx, qRecordHost, c.SchemaVersion, at, c.Host, warp.HostSeenStep.Nanoseconds()); err != nil {
		return false, translate("record host", err)
	}
	return false, nil
}

func (t *tx) HostRecorded(ctx context.Context, host string) (bool, error) {
	var ok bool
	if err := t.queryRow(ctx, qHostRecorded, host).Scan(&ok); err != nil {
		return false, translate("read host", err)
	}
	return ok, nil
}

func (t *tx) HostsOfToken(ctx context.Context, token string, since time.Time) (int, error) {
	var n int
	if err := t.queryRow(ctx, qHostsOfToken, token, nanos(since)).Scan(&n); err != nil {
		return 0, translate("count hosts of a token", err)
	}
	return n, nil
}

// Adoption counts the rows warp.CountWindow names: a heartbeat up to 59 s
// older than since may be counted, which only keeps the activity-mode
// guard on the safe side.
func (t *tx) Adoption(ctx context.Context, since time.Time) ([]warp.HostAdoption, error) {
	minutes, hours := warp.CountWindow(since)
	rows, err := t.query(ctx, qAdoption, minutes, hours, nanos(since), warp.MinuteSpan, warp.HourSpan)
	if err != nil {
		return nil, translate("adoption", err)
	}
	defer rows.Close()
	out := []warp.HostAdoption{}
	for rows.Next() {
		var h warp.HostAdoption
		var seen int64
		if err := rows.Scan(&h.Host, &h.LastSchemaVersion, &seen, &h.V1Count, &h.V2Count); err != nil {
			return nil, translate("adoption", err)
		}
		h.LastSeen = fromNanos(seen)
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, translate("adoption", err)
	}
	return out, nil
}

// HostsBySchema implements warp.Tx.
func (t *tx) HostsBySchema(ctx context.Context, since time.Time) (map[int]int, error) {
	rows, err := t.query(ctx, qHostsBySchema, nanos(since))
	if err != nil {
		return nil, translate("hosts by schema", err)
	}
	defer rows.Close()
	out := map[int]int{}
	for rows.Next() {
		var v, n int
		if err := rows.Scan(&v, &n); err != nil {
			return nil, translate("hosts by schema", err)
		}
		out[v] = n
	}
	if err := rows.Err(); err != nil {
		return nil, translate("hosts by schema", err)
	}
	return out, nil
}

// PruneHeartbeats drops the buckets that end at or before before, and the
// hosts not seen since.
func (t *tx) PruneHeartbeats(ctx context.Context, before time.Time) error {
	if _, err := t.exec(ctx, qPruneCounts, before.Unix()); err != nil {
		return translate("prune heartbeat counts", err)
	}
	if _, err := t.exec(ctx, qPruneHosts, nanos(before)); err != nil {
		return translate("prune hosts", err)
	}
	return nil
}

func (t *tx) Meta(ctx context.Context, key string) (string, error) {
	var v string
	if err := t.queryRow(ctx, qMeta, key).Scan(&v); err != nil {
		return "", translate("read meta "+key, err)
	}
	return v, nil
}

func (t *tx) SetMeta(ctx context.Context, key, value string) error {
	if _, err := t.exec(ctx, qSetMeta, key, value); err != nil {
		return translate("write meta "+key, err)
	}
	return nil
}

// InsertSession implements warp.Tx.
func (t *tx) InsertSession(ctx context.Context, s warp.Session) error {
	if _, err := t.exec(ctx, `INSERT INTO sessions (id_hash, token_id, name, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`,
		s.IDHash, s.TokenID, s.Name, nanos(s.CreatedAt), nanos(s.ExpiresAt)); err != nil {
		return translate("insert session", err)
	}
	return nil
}

// Session implements warp.Tx.
func (t *tx) Session(ctx context.Context, idHash string) (warp.Session, error) {
	s := warp.Session{IDHash: idHash}
	var created, expires int64
	if err := t.queryRow(ctx, `SELECT token_id, name, created_at, expires_at FROM sessions WHERE id_hash = ?`, idHash).
		Scan(&s.TokenID, &s.Name, &created, &expires); err != nil {
		return warp.Session{}, translate("read session", err)
	}
	s.CreatedAt, s.ExpiresAt = fromNanos(created), fromNanos(expires)
	return s, nil
}

// DeleteSession implements warp.Tx.
func (t *tx) DeleteSession(ctx context.Context, idHash string) error {
	if _, err := t.exec(ctx, `DELETE FROM sessions WHERE id_hash = ?`, idHash); err != nil {
		return translate("delete session", err)
	}
	return nil
}

// PruneSessions implements warp.Tx.
func (t *tx) PruneSessions(ctx context.Context, now time.Time, limit int) (int, error) {
	res, err := t.exec(ctx, `DELETE FROM sessions WHERE id_hash IN
		(SELECT id_hash FROM sessions WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)`, nanos(now), limit)
	if err != nil {
		return 0, translate("prune sessions", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, translate("prune sessions", err)
	}
	return int(n), nil
}
