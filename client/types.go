package client

import "time"

// DefaultURL is where clients look for warp when WARP_URL is unset.
const DefaultURL = "http://127.0.0.1:7077"

// Ticket is a ticket on the wire.
type Ticket struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	Labels    []string  `json:"labels"`
	State     string    `json:"state"`
	Epoch     int64     `json:"epoch"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Lease is the ticket's latest lease (held or ended); absent when never claimed.
	Lease *Lease `json:"lease,omitempty"`
	// Verdict of the held lease; empty unless the ticket is claimed.
	Verdict string `json:"verdict,omitempty"`
	// LeaseSecret is in the answer of a claim that asked for one (request
	// header Warp-Lease-Secret: new), and nowhere else: the holder sends it
	// back in the same header with every write to the lease.
	LeaseSecret string `json:"lease_secret,omitempty"`
	// Attempts are the ticket's leases with what each left (newest first,
	// at most 100): in the answers of GET /v1/tickets/{id} and of a claim
	// (there the new lease is the first), nowhere else.
	Attempts []Attempt `json:"attempts,omitempty"`
}

// Attempt is one lease of a ticket and what it left for the next
// claimant: how it ended, the verdict at its end in words, the agent's
// last note and the snapshot of its worktree.
type Attempt struct {
	Number    int64      `json:"number"` // the lease's epoch
	Agent     string     `json:"agent"`
	Host      string     `json:"host"`
	State     string     `json:"state"` // held, completed, released, lapsed
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	// EndReason is the lapse reason (no-activity, no-heartbeat,
	// agent-exited) or the release reason; Exit the loop's exit report.
	EndReason string `json:"end_reason,omitempty"`
	Exit      string `json:"exit,omitempty"`
	// EndedBy is who ended it: an operator's name, "agent", "warp".
	EndedBy string `json:"ended_by,omitempty"`
	// EndVerdict is the verdict at its end in words ("stalled 31m0s").
	EndVerdict string     `json:"end_verdict,omitempty"`
	Note       string     `json:"note,omitempty"`
	NoteAt     *time.Time `json:"note_at,omitempty"`
	PRURL      string     `json:"pr_url,omitempty"`
	Snapshot   *Snapshot  `json:"snapshot,omitempty"`
}

// Snapshot is the state of an attempt's worktree as its loop saved it
// (body of POST /v1/tickets/{id}/attempts/{epoch}/snapshot, and within
// Attempt).
type Snapshot struct {
	// State: saved (Commit under Ref), gone (the worktree was already
	// gone: nothing to save) or failed (Detail says why).
	State  string `json:"state"`
	Commit string `json:"commit,omitempty"`
	Ref    string `json:"ref,omitempty"`    // refs/gyrum/<ticket>/<epoch>
	Base   string `json:"base,omitempty"`   // the HEAD the worktree was at
	Branch string `json:"branch,omitempty"` // the branch it had checked out
	Remote string `json:"remote,omitempty"` // the repository's remote URL
	Pushed bool   `json:"pushed,omitempty"` // Ref was pushed to Remote
	Host   string `json:"host,omitempty"`   // the host whose repository holds Ref
	Detail string `json:"detail,omitempty"`
	// At is when warp recorded it (ignored in a request).
	At *time.Time `json:"at,omitempty"`
}

// Snapshot states.
const (
	SnapshotSaved  = "saved"
	SnapshotGone   = "gone"
	SnapshotFailed = "failed"
)

// HeaderLeaseSecret carries the lease secret: "new" on a claim asks for
// one; every write to a lease (heartbeat, exit report, release, complete)
// by an agent token carries the secret its claim returned.
const HeaderLeaseSecret = "Warp-Lease-Secret"

// LeaseSecretNew is the value of HeaderLeaseSecret that asks a claim for a
// lease secret.
const LeaseSecretNew = "new"

// Lease is a lease on the wire.
type Lease struct {
	Epoch           int64      `json:"epoch"`
	Agent           string     `json:"agent"`
	Host            string     `json:"host"`
	State           string     `json:"state"`
	ClaimedAt       time.Time  `json:"claimed_at"`
	LastHeartbeatAt time.Time  `json:"last_heartbeat_at"`
	LastActivityAt  time.Time  `json:"last_activity_at"`
	SchemaVersion   int        `json:"schema_version"`
	InFlight        string     `json:"in_flight,omitempty"`
	FirstV2At       *time.Time `json:"first_v2_at,omitempty"`
	// RefreshedAt is the last claim or heartbeat that extended the lease
	// (a stale report does not): what legacy mode expires a v2 lease on.
	RefreshedAt      *time.Time `json:"refreshed_at,omitempty"`
	ExpiresAt        time.Time  `json:"expires_at"`
	Exit             string     `json:"exit,omitempty"`
	ExitedAt         *time.Time `json:"exited_at,omitempty"`
	EndedAt          *time.Time `json:"ended_at,omitempty"`
	EndReason        string     `json:"end_reason,omitempty"`
	FallbackExtended bool       `json:"fallback_extended,omitempty"`
	PRURL            string     `json:"pr_url,omitempty"`
	HookSeen         string     `json:"hook_seen,omitempty"`
	HookEvents       int64      `json:"hook_events,omitempty"`
	// LastProgressAt is when the agent's work last progressed (issue 44):
	// the claim, then what its loop reports; absent for a lease whose
	// loop never reported progress.
	LastProgressAt *time.Time `json:"last_progress_at,omitempty"`
	// Loop says what repeats while the loop reports the agent's latest
	// calls loop; absent otherwise.
	Loop *LoopReport `json:"loop,omitempty"`
}

// LeaseStatus is the answer of GET /v1/tickets/{id}/leases/{epoch}: what
// became of one lease, and the ticket's state and epoch now (a
// CurrentEpoch above Lease.Epoch: another claim took the ticket over). An
// agent may read a lease whose secret it presents, so a loop or hook can
// learn how its own lease ended with an agent token.
type LeaseStatus struct {
	Ticket       string `json:"ticket"`
	TicketState  string `json:"ticket_state"`
	CurrentEpoch int64  `json:"current_epoch"`
	Lease        Lease  `json:"lease"`
}

// TicketList is the answer of GET /v1/tickets.
type TicketList struct {
	Tickets    []Ticket `json:"tickets"`
	NextCursor string   `json:"next_cursor,omitempty"`
}

// CreateTicketRequest is the body of POST /v1/tickets.
type CreateTicketRequest struct {
	ID     string   `json:"id,omitempty"`
	Title  string   `json:"title"`
	Labels []string `json:"labels,omitempty"`
}

// ClaimRequest is the body of POST /v1/tickets/{id}/claim.
type ClaimRequest struct {
	Agent string `json:"agent,omitempty"`
	Host  string `json:"host,omitempty"`
}

// ClaimNextRequest is the body of POST /v1/claims/next.
type ClaimNextRequest struct {
	Agent  string   `json:"agent,omitempty"`
	Host   string   `json:"host,omitempty"`
	Labels []string `json:"labels,omitempty"`
}

// ReleaseRequest is the body of POST /v1/tickets/{id}/release. Epoch may be
// omitted by admins to release the current lease.
type ReleaseRequest struct {
	Epoch  int64  `json:"epoch,omitempty"`
	Reason string `json:"reason,omitempty"`
	// IdleForS, when positive, makes the release conditional: the server
	// releases only a lease that has shown no progress for longer than
	// this many seconds by its own clock, and answers 409 conflict for one
	// that has (activity that arrived after the caller looked).
	IdleForS float64 `json:"idle_for_s,omitempty"`
}

// EditTicketRequest is the body of PATCH /v1/tickets/{id}: what to change
// of a ticket, in any state. Labels (an empty list removes every label)
// excludes AddLabels and RemoveLabels; at least one field must be given.
type EditTicketRequest struct {
	Title        *string   `json:"title,omitempty"`
	Labels       *[]string `json:"labels,omitempty"`
	AddLabels    []string  `json:"add_labels,omitempty"`
	RemoveLabels []string  `json:"remove_labels,omitempty"`
}

// TicketChangeRequest is the body of POST /v1/tickets/{id}/cancel and
// POST /v1/tickets/{id}/reopen: why (at most 256 bytes), recorded with
// the event (and, of a cancel that releases a lease, in its end reason).
type TicketChangeRequest struct {
	Reason string `json:"reason,omitempty"`
}

// CompleteRequest is the body of POST /v1/tickets/{id}/complete.
type CompleteRequest struct {
	Epoch int64  `json:"epoch,omitempty"`
	PRURL string `json:"pr_url,omitempty"`
}

// HeartbeatRequest is the body of POST /heartbeat and /v1/heartbeat. A body
// without schema_version is v1 (the unmigrated loops' contract). Unknown fields are
// ignored so newer loops can add optional ones.
type HeartbeatRequest struct {
	SchemaVersion *int     `json:"schema_version,omitempty"`
	Ticket        string   `json:"ticket"`
	Epoch         int64    `json:"epoch,omitempty"`
	Host          string   `json:"host,omitempty"`
	Agent         string   `json:"agent,omitempty"`
	ActivityAgeS  *float64 `json:"activity_age_s,omitempty"`
	InFlight      string   `json:"in_flight,omitempty"`
	Exit          string   `json:"exit,omitempty"`
	// HookSeen and HookEvents are optional (hook health): whether the agent's
	// hook fired since the loop started, and hook events since the previous POST.
	HookSeen   *bool `json:"hook_seen,omitempty"`
	HookEvents int64 `json:"hook_events,omitempty"`
	// Stale (v2, optional) marks a report from a live loop whose agent has
	// shown no activity within the loop's staleness limit: it keeps the
	// verdict "stalled" (not "silent") and never extends the lease.
	Stale bool `json:"stale,omitempty"`
	// Note (v2, optional) is the agent's latest note (gyrum note, at most
	// 1024 bytes), sent once after it changes; NoteAt is when the agent
	// wrote it. warp keeps it as the attempt's last note.
	Note   *string    `json:"note,omitempty"`
	NoteAt *time.Time `json:"note_at,omitempty"`
	// ProgressAgeS (v2, optional) is the time since the agent's work last
	// progressed (a worktree state new in the lease, a commit, a call
	// whose result changed, a note); absent from loops before issue 44.
	ProgressAgeS *float64 `json:"progress_age_s,omitempty"`
	// Loop (v2, optional) says what repeats while the agent's latest
	// calls make a loop; absent when they do not.
	Loop *LoopReport `json:"loop,omitempty"`
}

// LoopReport says what repeats: the repeated call's label ("" when the
// host keeps no labels), how many calls the repetition spans, and how the
// call fails ("" when it does not).
type LoopReport struct {
	Label string `json:"label"`
	Count int    `json:"count"`
	Error string `json:"error,omitempty"`
}

// SchemaV2 is the heartbeat schema version whose bodies carry the agent's
// activity (HeartbeatRequest.ActivityAgeS): the one activity mode counts.
const SchemaV2 = 2

// NewHeartbeat returns a schema version 2 heartbeat for the lease epoch of
// ticket, whose agent last showed activity activityAge ago: the body an
// agent's loop sends every interval. Set the other optional fields on the
// result (HookSeen with Ptr).
func NewHeartbeat(ticket string, epoch int64, activityAge time.Duration) HeartbeatRequest {
	return HeartbeatRequest{SchemaVersion: Ptr(SchemaV2), Ticket: ticket, Epoch: epoch, ActivityAgeS: Ptr(activityAge.Seconds())}
}

// Ptr returns a pointer to a copy of v: the value of an optional field,
// such as HeartbeatRequest.HookSeen (Ptr(true)).
func Ptr[T any](v T) *T { return &v }

// HeartbeatResponse is the 200 answer to a heartbeat.
type HeartbeatResponse struct {
	Ticket    string    `json:"ticket"`
	Epoch     int64     `json:"epoch"`
	ExpiresAt time.Time `json:"expires_at"`
	Verdict   string    `json:"verdict"`
	Mode      string    `json:"mode"`
	// Extended is false when the heartbeat was recorded but did not extend
	// the lease (v1 in activity mode); Note then says why.
	Extended bool   `json:"extended"`
	Note     string `json:"note,omitempty"`
	// MaxRetryGapS is the longest a loop may wait between attempts, also
	// while warp fails, so that a restart's startup grace covers it;
	// absent when the server has no grace.
	MaxRetryGapS float64 `json:"max_retry_gap_s,omitempty"`
	// ExpiresInS is expires_at counted from the server's clock when it
	// answered: a loop holds its lease on its own elapsed time from that,
	// whatever the two clocks say. Absent (0) from servers before
	// 2026-12-07 and for a lease that has already lapsed.
	ExpiresInS float64 `json:"expires_in_s,omitempty"`
}

// HeaderProbe, set to ProbeValue on a heartbeat, makes it a probe: warp
// checks the token and the body as it checks a heartbeat's and answers
// HeartbeatProbe, but applies nothing and counts nothing (no lease, no
// adoption count, no heartbeat metric). gyrum doctor probes this way.
// A server from before probes (2026-12-07) ignores the header and applies
// the heartbeat as any other.
const HeaderProbe = "Warp-Probe"

// ProbeValue is the one value HeaderProbe takes.
const ProbeValue = "1"

// HeartbeatProbe is the 200 answer to a probe heartbeat (HeaderProbe).
type HeartbeatProbe struct {
	// Probe is true from a server that knows probes; false when an older
	// server applied the body as a heartbeat (its answer was a
	// HeartbeatResponse, of which Ticket is read here).
	Probe bool `json:"probe"`
	// SchemaVersion is the version the body was read as (1 or 2).
	SchemaVersion int    `json:"schema_version,omitempty"`
	Ticket        string `json:"ticket"`
}

// Event is one history entry on the wire.
type Event struct {
	ID     int64          `json:"id"`
	Ticket string         `json:"ticket,omitempty"`
	Epoch  int64          `json:"epoch,omitempty"`
	Kind   string         `json:"kind"`
	At     time.Time      `json:"at"`
	Data   map[string]any `json:"data,omitempty"`
}

// EventList is the answer of GET /v1/tickets/{id}/events.
type EventList struct {
	Events []Event `json:"events"`
}

// HostAdoption is one host of the adoption answer.
type HostAdoption struct {
	Host              string    `json:"host"`
	LastSchemaVersion int       `json:"last_schema_version"`
	LastSeen          time.Time `json:"last_seen"`
	V1Count           int64     `json:"v1_count"`
	V2Count           int64     `json:"v2_count"`
}

// AdoptionSummary is the summary of the adoption answer.
type AdoptionSummary struct {
	Hosts                int  `json:"hosts"`
	V2Hosts              int  `json:"v2_hosts"`
	ReadyForActivityMode bool `json:"ready_for_activity_mode"`
}

// Adoption is the answer of GET /v1/adoption.
type Adoption struct {
	Window string         `json:"window"`
	Hosts  []HostAdoption `json:"hosts"`
	// Summary covers every host, on every page.
	Summary AdoptionSummary `json:"summary"`
	// NextCursor is the ?cursor= of the next page; absent on the last.
	NextCursor string `json:"next_cursor,omitempty"`
}

// ModeBody is the answer of GET /v1/mode and the body of PUT /v1/mode.
type ModeBody struct {
	Mode  string `json:"mode"`
	Force bool   `json:"force,omitempty"`
}

// ModeStatus is the answer to GET /v1/mode (and to PUT, without Now).
type ModeStatus struct {
	Mode string `json:"mode"`
	// Now is the server's clock when it answered GET /v1/mode (absent from
	// older servers and in PUT's answer): what a caller judges lease ages
	// against, rather than its own clock.
	Now *time.Time `json:"now,omitempty"`
}

// HostAlarm is a raised host alarm on the wire: most of the host's leases
// turned stalled or unwired within one stall window.
type HostAlarm struct {
	Since   time.Time `json:"since"`
	Message string    `json:"message"` // "activity hook likely broken on H"
	Fix     string    `json:"fix"`     // "run `gyrum doctor` on host H"
	Leases  int       `json:"leases"`  // held leases when raised
	Stale   int       `json:"stale"`   // of which stale
	EventID int64     `json:"event_id"`
}

// HostHook counts a host's held leases by what their loops report about
// the activity hook.
type HostHook struct {
	Seen    int `json:"seen"`
	NotSeen int `json:"not_seen"`
	Unknown int `json:"unknown"` // loops from before hook reporting
}

// Host is one host of GET /v1/hosts.
type Host struct {
	Host     string         `json:"host"`
	Leases   int            `json:"leases"`   // held leases
	Verdicts map[string]int `json:"verdicts"` // held leases by verdict, every verdict present
	Hook     HostHook       `json:"hook"`
	// Adoption is the host's line of the adoption query; null when it sent
	// no heartbeat within the window.
	Adoption *HostAdoption `json:"adoption"`
	// Alarm is the raised host alarm; null when none.
	Alarm *HostAlarm `json:"alarm"`
}

// HostList is the answer of GET /v1/hosts?window=24h.
type HostList struct {
	Window string `json:"window"`
	Hosts  []Host `json:"hosts"`
	Alarms int    `json:"alarms"` // hosts in alarm, on every page
	// NextCursor is the ?cursor= of the next page; absent on the last.
	NextCursor string `json:"next_cursor,omitempty"`
}

// ModeChange is one switch of the expiry mode in GET /v1/mode/history: the
// mode-changed event's id, when, from and to which mode, and whether the
// switch was forced past hosts still sending v1.
type ModeChange struct {
	ID     int64     `json:"id"`
	At     time.Time `json:"at"`
	From   string    `json:"from"`
	To     string    `json:"to"`
	Forced bool      `json:"forced"`
}

// ModeHistory is the answer of GET /v1/mode/history, oldest change first.
type ModeHistory struct {
	Changes []ModeChange `json:"changes"`
}

// Health is the answer of /healthz and /readyz.
type Health struct {
	Status string `json:"status"`
}

// Exit reports: the values of HeartbeatRequest.Exit.
const (
	// ExitParentExited reports that the watched agent process is gone.
	ExitParentExited = "parent-exited"
	// ExitWorktreeGone reports that the worktree's lease file is gone.
	ExitWorktreeGone = "worktree-gone"
)

// Lease states: the values of Lease.State and of the lease_ended detail
// DetailLeaseState.
const (
	// LeaseHeld is the state of the lease an agent holds.
	LeaseHeld = "held"
	// LeaseReleased is the state of a lease its holder or an admin released.
	LeaseReleased = "released"
	// LeaseCompleted is the state of a lease whose ticket was completed.
	LeaseCompleted = "completed"
	// LeaseLapsed is the state of a lease the server expired.
	LeaseLapsed = "lapsed"
)
