// Package warp is the domain of the coordination service: tickets, leases
// with fencing epochs, heartbeats, the expiry policy and its modes, verdicts,
// events and host adoption. It owns the Store interface that the database
// adapters (internal/sqlite, internal/postgres) implement, and the Service
// that holds every rule so the adapters stay thin.
package warp

import (
	"time"

	"github.com/gyrum-labs/warp/internal/ticketid"
)

// TicketState is the life-cycle state of a ticket.
type TicketState string

// Ticket states. A release or a lapse returns a claimed ticket to open,
// or, under an attempt cap (Config.MaxAttempts), to blocked once that many
// attempts ended without completing: claim-next skips it. An operator
// cancels an open, blocked or claimed ticket (its lease, when held, is
// released) and reopens a completed, cancelled or blocked one.
const (
	TicketOpen      TicketState = "open"
	TicketClaimed   TicketState = "claimed"
	TicketCompleted TicketState = "completed"
	TicketCancelled TicketState = "cancelled"
	TicketBlocked   TicketState = "blocked"
)

// TicketStates lists the ticket states, in their life-cycle order.
func TicketStates() []TicketState {
	return []TicketState{TicketOpen, TicketClaimed, TicketCompleted, TicketCancelled, TicketBlocked}
}

// Valid reports whether s is a known ticket state.
func (s TicketState) Valid() bool {
	return s == TicketOpen || s == TicketClaimed || s == TicketCompleted || s == TicketCancelled || s == TicketBlocked
}

// ValidTicketID reports whether id obeys the ticket id rule
// ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$ (internal/ticketid).
func ValidTicketID(id string) bool { return ticketid.Valid(id) }

// Ticket is a unit of work that agents claim.
type Ticket struct {
	ID        string
	Seq       int64 // creation order, assigned by the store; claim-next takes the lowest
	Title     string
	Labels    []string
	State     TicketState
	Epoch     int64 // epoch of the latest lease, 0 when never claimed
	CreatedAt time.Time
	UpdatedAt time.Time
}

// LeaseState is the state of one lease.
type LeaseState string

// Lease states. Every state but held is final.
const (
	LeaseHeld      LeaseState = "held"
	LeaseReleased  LeaseState = "released"
	LeaseCompleted LeaseState = "completed"
	LeaseLapsed    LeaseState = "lapsed"
)

// Lease is one claim of a ticket. Epoch is the fencing token: the ticket's
// previous epoch + 1.
type Lease struct {
	Ticket string
	Epoch  int64
	Agent  string
	Host   string
	State  LeaseState

	ClaimedAt       time.Time
	LastHeartbeatAt time.Time
	LastActivityAt  time.Time
	// SchemaVersion is the schema of the latest heartbeat: 0 before any
	// heartbeat (the claim only), 1 or 2 after.
	SchemaVersion int
	// InFlight is the tool the loop reported in flight with its latest v2 heartbeat.
	InFlight string
	// FirstV2At is when the lease received its first v2 heartbeat; zero before.
	FirstV2At time.Time
	// Claimant identifies the token that claimed (Caller.Token; empty
	// without tokens) and SecretHash the lease secret the claim issued
	// (empty for a client that asked for none); see Service.Claim and
	// authorizeWrite. Set at the claim, never changed.
	Claimant   string
	SecretHash string
	// RefreshedAt is when the server last extended the lease (claim or
	// heartbeat); the startup grace protects leases refreshed before a start.
	RefreshedAt time.Time
	// ExpiresAt is effective time + lease window under the current mode.
	ExpiresAt time.Time

	// Exit is the reason of the loop's exit report ("parent-exited",
	// "worktree-gone"), empty when none arrived.
	Exit     string
	ExitedAt time.Time

	EndedAt   time.Time
	EndReason string // lapse reason, release reason
	// FallbackExtended reports, for a lapsed lease, whether the v1 fallback
	// kept it alive longer than activity alone would have.
	FallbackExtended bool
	PRURL            string

	// HookSeen is what the loop last said about the activity hook: unknown
	// (older loops send nothing), no (not fired since the loop started) or yes.
	HookSeen HookSeen
	// HookEvents counts hook events the loop reported, summed over heartbeats.
	HookEvents int64
	// RecordedVerdict is the verdict last recorded as an event for this
	// lease (the sweep-time verdict pass); empty before the first pass.
	RecordedVerdict Verdict
	// VerdictDueAt is when the verdict pass must next look at the lease
	// (Policy.VerdictDue as of its last write); zero when never.
	VerdictDueAt time.Time
	// LastProgressAt is when the agent's work last progressed (issue
	// 44): the claim, moved forward by heartbeats' progress_age_s; zero
	// for a lease from before progress reports.
	LastProgressAt time.Time
	// Loop is what repeats, as the latest heartbeat reported it; zero
	// (Count 0) when the agent's latest calls make no loop.
	Loop Loop
}

// Loop says what repeats in an agent's latest calls: the repeated call's
// label ("" when its host keeps no labels), how many calls the repetition
// spans, how the call fails ("" when it does not).
type Loop struct {
	Label string
	Count int
	Error string
}

// Looping reports whether l names a loop.
func (l Loop) Looping() bool { return l.Count > 0 }

// HookSeen is the loop's report on whether the agent's hook has fired.
type HookSeen string

// HookSeen values.
const (
	HookUnknown HookSeen = ""
	HookNo      HookSeen = "no"
	HookYes     HookSeen = "yes"
)

// Held reports whether the lease is still live.
func (l Lease) Held() bool { return l.State == LeaseHeld }

// Mode is the expiry policy, stored in the database so replicas agree.
type Mode string

// Expiry modes, in the order of the migration phases.
const (
	ModeLegacy     Mode = "legacy"
	ModeTransition Mode = "transition"
	ModeActivity   Mode = "activity"
)

// DefaultMode is the mode a fresh database starts in.
const DefaultMode = ModeTransition

// ParseMode returns the Mode named s or an ErrInvalid error.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeLegacy, ModeTransition, ModeActivity:
		return m, nil
	}
	return "", Errorf(ErrInvalid, "unknown mode %q: want legacy, transition or activity", s)
}

// Exit report reasons a loop may send.
const (
	ExitParentExited = "parent-exited"
	ExitWorktreeGone = "worktree-gone"
)

// ValidExit reports whether s is a known exit report reason.
func ValidExit(s string) bool { return s == ExitParentExited || s == ExitWorktreeGone }

// Lapse reasons recorded when the sweep ends a lease.
const (
	LapseNoActivity  = "no-activity"
	LapseNoHeartbeat = "no-heartbeat"
	LapseAgentExited = "agent-exited"
	// LapseNoProgress: warp serve --progress-deadline lapsed a looping or
	// spinning lease (issue 44).
	LapseNoProgress   = "no-progress"
	ReleaseExitReport = "exit-report" // release reason under --release-on-exit
)

// EventKind names an entry of a ticket's history.
type EventKind string

// Event kinds.
const (
	EventCreated          EventKind = "created"
	EventClaimed          EventKind = "claimed"
	EventFirstV2Heartbeat EventKind = "first-v2-heartbeat"
	EventExitReport       EventKind = "exit-report"
	EventLapsed           EventKind = "lapsed"
	EventReleased         EventKind = "released"
	EventCompleted        EventKind = "completed"
	EventVerdictChanged   EventKind = "verdict-changed"
	EventModeChanged      EventKind = "mode-changed"
	// An operator's changes to a ticket (Service.EditTicket, Reopen,
	// Cancel).
	EventEdited    EventKind = "edited"
	EventReopened  EventKind = "reopened"
	EventCancelled EventKind = "cancelled"
	// EventBlocked: the attempt cap blocked the ticket {attempts,
	// max_attempts, reason}; EventSnapshot: an attempt's loop reported
	// its worktree's snapshot {state, commit, host}.
	EventBlocked  EventKind = "blocked"
	EventSnapshot EventKind = "snapshot"
)

// Event is one entry of the history. Ticket is empty for global events
// (mode changes).
type Event struct {
	ID     int64 // assigned by the store, increasing
	Ticket string
	Epoch  int64
	Kind   EventKind
	At     time.Time
	// Data is the kind's detail, of the kind's type (events.go): a
	// lapse's LapsedData, a claim's ClaimedData...
	Data EventData
}

// Heartbeat is one heartbeat as decoded from the wire.
type Heartbeat struct {
	SchemaVersion int // 1 or 2
	Ticket        string
	Epoch         int64 // v2 only
	Host          string
	Agent         string
	ActivityAge   float64 // seconds, v2 only
	InFlight      string
	Exit          string // v2 exit report
	// HookSeen and HookEvents are optional v2 fields: whether the hook has
	// fired since the loop started, and how many hook events since the
	// previous POST. Absent (nil / 0) from older loops.
	HookSeen   *bool
	HookEvents int64
	// Stale (v2): the loop reports that the agent has shown no activity
	// within its staleness limit. Recorded as a heartbeat (the loop lives),
	// never as an extension.
	Stale bool
	// Note (v2, optional) is the agent's latest note (gyrum note), at most
	// MaxNoteLen bytes, written at NoteAt (zero: when received); nil when
	// the loop sent none. Kept as the attempt's last note.
	Note   *string
	NoteAt time.Time
	// ProgressAge (v2, optional, seconds) is the time since the agent's
	// work last progressed; nil from loops before issue 44, which leave
	// the lease's progress and loop as they are. Loop is what repeats in
	// the agent's latest calls, nil when nothing does.
	ProgressAge *float64
	Loop        *Loop
	// ReceivedAt is when this warp received the heartbeat (Service sets
	// it); its activity age counts back from then, not from when a batch
	// applies it, so a wait in the group commit credits no activity. Zero:
	// the time it is applied.
	ReceivedAt time.Time
}

// HeartbeatResult is the answer to a heartbeat.
type HeartbeatResult struct {
	Ticket    string
	Epoch     int64
	ExpiresAt time.Time
	Verdict   Verdict
	Mode      Mode
	// Extended is false when the heartbeat was recorded but did not extend
	// the lease (a v1 heartbeat in activity mode); Note says why.
	Extended bool
	Note     string
	// MaxRetryGap is the longest a loop may wait between attempts so that
	// a restart's startup grace covers it; 0 without a grace.
	MaxRetryGap time.Duration
}

// HostAdoption is one host's line of the adoption query.
type HostAdoption struct {
	Host              string
	LastSchemaVersion int
	LastSeen          time.Time
	V1Count           int64 // within the window
	V2Count           int64
}

// Adoption is the answer to the adoption query.
type Adoption struct {
	Window               time.Duration
	Hosts                []HostAdoption
	HostCount            int
	V2Hosts              int // hosts whose window holds v2 heartbeats and no v1
	ReadyForActivityMode bool
}
