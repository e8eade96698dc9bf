package warp

import (
	"context"
	"time"
)

// Store is the persistence the Service runs on. Implementations:
// internal/sqlite (embedded default) and internal/postgres. Every rule lives
// in the Service; a Store only reads and writes rows, inside transactions.
//
// Errors: methods return ErrNotFound for a missing row, ErrConflict for a
// duplicate key, ErrUnavailable (wrapped) when the database cannot be
// reached; anything else is an internal error.
type Store interface {
	// Update runs fn in a read-write transaction and commits when fn returns
	// nil. Concurrent Updates are serialised on the rows they lock (SQLite:
	// one writer at a time; PostgreSQL: row locks), so a read inside fn
	// followed by a write is atomic.
	Update(ctx context.Context, fn func(Tx) error) error
	// View runs fn in a read-only transaction.
	View(ctx context.Context, fn func(Tx) error) error
	// Ping reports whether the database is reachable.
	Ping(ctx context.Context) error
	// Close releases the database.
	Close() error
}

// Tx is one transaction of a Store. Methods that read a row for update lock
// it until the transaction ends.
type Tx interface {
	// CreateTicket inserts t and returns it with Seq assigned.
	// ErrConflict when the id exists. t.Labels arrive normalised (trimmed,
	// deduplicated, sorted: the Service's rule); a store keeps and returns
	// them in that order.
	CreateTicket(ctx context.Context, t Ticket) (Ticket, error)
	// Ticket returns the ticket with id, locked for update inside Update.
	// ErrNotFound when there is none.
	Ticket(ctx context.Context, id string) (Ticket, error)
	// UpdateTicket writes State, Epoch and UpdatedAt of t.
	UpdateTicket(ctx context.Context, t Ticket) error
	// EditTicket writes Title, Labels (normalised, as CreateTicket takes
	// them) and UpdatedAt of t. ErrNotFound when there is no such ticket.
	EditTicket(ctx context.Context, t Ticket) error
	// NextOpenTicket returns the open ticket with the lowest Seq carrying all
	// labels, locked for update, skipping tickets other transactions hold.
	// ErrNotFound when there is none.
	NextOpenTicket(ctx context.Context, labels []string) (Ticket, error)
	// Tickets lists tickets matching f in Seq order, after f.AfterSeq.
	Tickets(ctx context.Context, f TicketFilter) ([]TicketLease, error)
	// CountTickets counts tickets per state.
	CountTickets(ctx context.Context) (map[TicketState]int64, error)

	// CurrentLease returns ticket id and its current lease (the lease of
	// its epoch) in one read, both locked for update inside Update. The
	// ticket comes without its labels (nil): the heartbeat path, which
	// reads it, never shows them. ErrNotFound when the ticket does not
	// exist or was never claimed.
	CurrentLease(ctx context.Context, id string) (Ticket, Lease, error)
	// ReadBatch is CurrentLease for every ticket of ids (sorted by byte
	// order, distinct), locked as CurrentLease locks them and in that
	// order, in one round trip; a ticket CurrentLease would answer
	// ErrNotFound for is absent from the map. Then Meta(metaKey), read
	// after those locks are taken: found is false when the key is not set.
	ReadBatch(ctx context.Context, ids []string, metaKey string) (leases map[string]TicketLease, meta string, found bool, err error)
	// WriteBatch is UpdateLease for each of ls, leases of distinct
	// tickets whose holding did not change since they were read
	// (SameHolding) — only the columns a heartbeat writes are written, in
	// one statement where the database allows — then RecordHeartbeat for
	// each of cs, in its order (sorted by host, schema version, token),
	// without the answers: a host's last-seen may differ from the
	// one-by-one result by less than HostSeenStep. A lease of ls that is
	// not there fails the whole call with ErrNotFound.
	WriteBatch(ctx context.Context, ls []Lease, cs []HeartbeatCount) error
	// Lease returns the lease (ticket, epoch). ErrNotFound when there is none.
	Lease(ctx context.Context, ticket string, epoch int64) (Lease, error)
	// InsertLease inserts a new lease. ErrConflict when (ticket, epoch) exists.
	InsertLease(ctx context.Context, l Lease) error
	// UpdateLease writes every mutable field of l, keyed by (ticket, epoch).
	UpdateLease(ctx context.Context, l Lease) error
	// DueLeases returns up to limit leases that f matches (DueFilter.Match),
	// in ExpiresAt order, locked for update and skipping rows others hold.
	// The cost is O(due leases).
	DueLeases(ctx context.Context, f DueFilter, limit int) ([]Lease, error)
	// VerdictDueLeases returns up to limit held leases whose VerdictDueAt
	// is set and not after now, in VerdictDueAt order, locked for update
	// and skipping rows others hold (inside Update); limit <= 0: no limit.
	// The cost is O(due leases).
	VerdictDueLeases(ctx context.Context, now time.Time, limit int) ([]Lease, error)
	// HeldLeases returns up to limit held leases with (ticket) > after, in
	// ticket order, of host when it is not empty; without a host it locks
	// them (inside Update), in byte order of the ids, the order heartbeat
	// batches lock in, whatever a database's collation: a full pass for
	// recomputing expiry after a mode change, or one host's leases for
	// the fleet alarm (O(that host's held leases)).
	HeldLeases(ctx context.Context, host, after string, limit int) ([]Lease, error)
	// AddVerdictCounts adds delta to host's held-lease counts per recorded
	// verdict.
	AddVerdictCounts(ctx context.Context, host string, delta map[Verdict]int64) error
	// VerdictCounts returns the held-lease counts per host and recorded
	// verdict (rows with a count of 0 may be left out).
	VerdictCounts(ctx context.Context) ([]HostVerdictCount, error)
	// PruneVerdictCounts drops up to limit count rows that reached 0 (a
	// host whose leases of that verdict or hook health all ended), so the
	// rows follow the hosts that hold leases, not every host ever seen. A
	// row another transaction holds is left for the next prune.
	PruneVerdictCounts(ctx context.Context, limit int) error
	// EndedHosts returns the distinct hosts of the leases that ended at or
	// after since. The cost is O(leases ended since).
	EndedHosts(ctx context.Context, since time.Time) ([]string, error)
	// CountHeld counts held leases that b matches (VerdictBounds.Match).
	CountHeld(ctx context.Context, b VerdictBounds) (int64, error)

	// Attempts returns the leases of ticket with their attempt records
	// (a record never written is the zero AttemptRecord with Ticket and
	// Epoch set), newest epoch first, at most limit.
	Attempts(ctx context.Context, ticket string, limit int) ([]Attempt, error)
	// AttemptRecord returns the record of attempt (ticket, epoch); a
	// record never written is the zero one with Ticket and Epoch set.
	AttemptRecord(ctx context.Context, ticket string, epoch int64) (AttemptRecord, error)
	// SetAttemptNote writes the note and its time of attempt (ticket,
	// epoch), creating its record when there is none.
	SetAttemptNote(ctx context.Context, ticket string, epoch int64, note string, at time.Time) error
	// SetAttemptEnd writes the verdict in words and who ended attempt
	// (ticket, epoch), creating its record when there is none.
	SetAttemptEnd(ctx context.Context, ticket string, epoch int64, verdict, by string) error
	// SetAttemptSnapshot writes the snapshot of attempt (ticket, epoch)
	// when it has none (its state is empty), creating its record when
	// there is none; ErrConflict when it has one.
	SetAttemptSnapshot(ctx context.Context, ticket string, epoch int64, s Snapshot) error
	// SetAttemptCapReset marks attempt (ticket, epoch) as the one after
	// which the attempt cap counts again, creating its record when there
	// is none.
	SetAttemptCapReset(ctx context.Context, ticket string, epoch int64) error

	// AppendEvent appends e and returns its id.
	AppendEvent(ctx context.Context, e Event) (int64, error)
	// Events returns the events of ticket (the global events when ticket is
	// empty) with ID > afterID, in ID order, at most limit.
	Events(ctx context.Context, ticket string, afterID int64, limit int) ([]Event, error)
	// RecentEvents returns the newest events of the given kinds, newest
	// first, at most limit; all kinds when kinds is empty.
	RecentEvents(ctx context.Context, kinds []EventKind, limit int) ([]Event, error)
	// EventTallies counts the events of kinds (never empty) at or after
	// since per hour, kind and key (EventTally), in (hour, kind, key)
	// order, at most limit rows. The cost is O(events of those kinds
	// since): the index events (kind, at) answers it.
	EventTallies(ctx context.Context, kinds []EventKind, since time.Time, limit int) ([]EventTally, error)

	// RecordHeartbeat counts c.N heartbeats of c.Host with c.SchemaVersion
	// in the minute and hour buckets of c.At (CountRows) for the adoption
	// query, moves the host's last-seen forward — when c.At is HostSeenStep
	// past it or the schema version changed, so a host heartbeating many
	// times a second rewrites its row about once a second — and reports
	// whether the host was new; a new host records c.Token (Caller.Token)
	// as the one that reported it.
	RecordHeartbeat(ctx context.Context, c HeartbeatCount) (created bool, err error)
	// HostRecorded reports whether host has its row (RecordHeartbeat
	// made it, and no prune removed it since).
	HostRecorded(ctx context.Context, host string) (bool, error)
	// HostsOfToken counts the hosts first reported by token and seen at or
	// after since.
	HostsOfToken(ctx context.Context, token string, since time.Time) (int, error)
	// Adoption returns, per host seen at or after since, its last schema
	// version, last-seen time and v1/v2 counts of the buckets CountWindow
	// names for since (from the start of since's minute).
	Adoption(ctx context.Context, since time.Time) ([]HostAdoption, error)
	// HostsBySchema counts the hosts seen at or after since by the schema
	// version of their last heartbeat, from the hosts' rows alone (no
	// heartbeat counts: O(hosts), whatever the heartbeats of the window).
	HostsBySchema(ctx context.Context, since time.Time) (map[int]int, error)
	// HostsBySchemaPerHour counts, for each hour from since's hour on,
	// the hosts that heartbeated in it by the highest schema version they
	// sent in it, from the hour rows of the heartbeat counts (CountRows;
	// kept two adoption windows), in (hour, version) order, at most limit
	// rows.
	HostsBySchemaPerHour(ctx context.Context, since time.Time, limit int) ([]SchemaHour, error)
	// PruneHeartbeats drops heartbeat counts older than before.
	PruneHeartbeats(ctx context.Context, before time.Time) error

	// Meta returns the value stored under key; ErrNotFound when unset.
	Meta(ctx context.Context, key string) (string, error)
	// SetMeta stores value under key.
	SetMeta(ctx context.Context, key, value string) error

	// InsertSession stores a dashboard sign-in. ErrConflict when its
	// IDHash exists.
	InsertSession(ctx context.Context, s Session) error
	// Session returns the session whose id hashes to idHash, expired or
	// not (the caller judges). ErrNotFound when there is none.
	Session(ctx context.Context, idHash string) (Session, error)
	// DeleteSession removes the session whose id hashes to idHash; no
	// error when there is none.
	DeleteSession(ctx context.Context, idHash string) error
	// PruneSessions removes up to limit sessions that expired at or before
	// now and returns how many it removed.
	PruneSessions(ctx context.Context, now time.Time, limit int) (int, error)
}

// Session is one browser's sign-in to the dashboard (Tx.InsertSession).
// The store keeps only a hash of the session id the browser holds, so a
// copy of the database opens no dashboard.
type Session struct {
	// IDHash is the hex SHA-256 of the session id (TokenID of the id).
	IDHash string
	// TokenID is the TokenID of the admin token that signed in: the
	// session ends when that token is no longer configured.
	TokenID string
	// Name is who signed in, as the sign-in form gave it: the dashboard's
	// writes record it in their events ("by").
	Name      string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// EventTally is the number of events of one kind and key in one hour
// (Tx.EventTallies). Key is the event's "to" for verdict-changed and
// mode-changed events, its "reason" for the others ("" when it has none).
type EventTally struct {
	Hour time.Time // the start of the hour, UTC
	Kind EventKind
	Key  string
	N    int64
}

// SchemaHour is the number of hosts whose highest schema version in one
// hour was SchemaVersion (Tx.HostsBySchemaPerHour).
type SchemaHour struct {
	Hour          time.Time // the start of the hour, UTC
	SchemaVersion int
	Hosts         int
}

// HostVerdictCount is the number of held leases of Host whose recorded
// verdict is Verdict (Store.VerdictCounts).
type HostVerdictCount struct {
	Host    string
	Verdict Verdict
	N       int64
}

// HeartbeatCount is N heartbeats of one host with one schema version, the
// latest at At, sent with Token (Store.RecordHeartbeat).
type HeartbeatCount struct {
	Host, Token   string
	SchemaVersion int
	At            time.Time
	N             int64
}

// HostSeenStep is how far a host's last-seen time must move before its
// row is rewritten (a new schema version rewrites it at once): a host's
// last-seen lags its last heartbeat by less than this.
const HostSeenStep = time.Second

// TicketLease is a ticket with its current lease, when it has one.
type TicketLease struct {
	Ticket Ticket
	Lease  *Lease // the lease of Ticket.Epoch; nil when never claimed
}

// TicketFilter selects tickets for listing.
type TicketFilter struct {
	State   TicketState // empty: any
	Verdict *VerdictBounds
	Host    string // held lease's host; empty: any
	// Labels: only tickets carrying every one (normalised); none: any.
	Labels []string
	// Search: only tickets whose id, or whose current lease's agent or
	// host, holds it, whatever the case; empty: any.
	Search   string
	AfterSeq int64
	Limit    int
	// RareVerdict, when set (never VerdictActive), has the store read the
	// candidates from the held leases recorded with it and those whose
	// recorded verdict is due by DueBy, instead of walking every ticket:
	// the leases Verdict's bounds select must be among them.
	RareVerdict Verdict
	DueBy       time.Time
	// HostFirst, with Host and without RareVerdict, has the store read the
	// candidates from Host's held leases instead of walking every ticket.
	HostFirst bool
}

// Meta keys the Service keeps in the Store.
const (
	MetaMode        = "mode"
	MetaLeaseWindow = "lease_window"
	// MetaVerdictThresholds holds the stall and silent thresholds the held
	// leases' verdict-due times were computed with (Policy.verdictKey).
	MetaVerdictThresholds = "verdict_thresholds"
	MetaGraceFrom         = "grace_from"       // RFC 3339 nano: leases refreshed before it are protected
	MetaGraceUntil        = "grace_until"      // RFC 3339 nano: ... until then
	MetaGraceDueBefore    = "grace_due_before" // RFC 3339 nano or "": ... unless due by then
	// The grace the last one replaced, while in force (the same three).
	MetaPrevGraceFrom      = "prev_grace_from"
	MetaPrevGraceUntil     = "prev_grace_until"
	MetaPrevGraceDueBefore = "prev_grace_due_before"
	MetaLastSweep          = "last_sweep"   // RFC 3339 nano
	MetaLastSweeper        = "last_sweeper" // Config.Instance of the last sweep
	// MetaLastVerdictPass is the time of the last verdict pass (RFC 3339
	// nano): the next one tallies the hosts whose leases ended since.
	MetaLastVerdictPass = "last_verdict_pass"
	// MetaAlarmHostsPending lists (JSON) the hosts with verdict changes
	// that the host alarm has not tallied yet: written with the changes,
	// cleared by the pass that tallied them.
	MetaAlarmHostsPending = "alarm_hosts_pending"
)
