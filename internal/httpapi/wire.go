package httpapi

import (
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// MaxBodyBytes is the request body limit; larger bodies get 413.
const MaxBodyBytes = 64 << 10

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
}

// Lease is a lease on the wire.
type Lease struct {
	Epoch            int64      `json:"epoch"`
	Agent            string     `json:"agent"`
	Host             string     `json:"host"`
	State            string     `json:"state"`
	ClaimedAt        time.Time  `json:"claimed_at"`
	LastHeartbeatAt  time.Time  `json:"last_heartbeat_at"`
	LastActivityAt   time.Time  `json:"last_activity_at"`
	SchemaVersion    int        `json:"schema_version"`
	InFlight         string     `json:"in_flight,omitempty"`
	FirstV2At        *time.Time `json:"first_v2_at,omitempty"`
	ExpiresAt        time.Time  `json:"expires_at"`
	Exit             string     `json:"exit,omitempty"`
	ExitedAt         *time.Time `json:"exited_at,omitempty"`
	EndedAt          *time.Time `json:"ended_at,omitempty"`
	EndReason        string     `json:"end_reason,omitempty"`
	FallbackExtended bool       `json:"fallback_extended,omitempty"`
	PRURL            string     `json:"pr_url,omitempty"`
	HookSeen         string     `json:"hook_seen,omitempty"`
	HookEvents       int64      `json:"hook_events,omitempty"`
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
}

// CompleteRequest is the body of POST /v1/tickets/{id}/complete.
type CompleteRequest struct {
	Epoch int64  `json:"epoch,omitempty"`
	PRURL string `json:"pr_url,omitempty"`
}

// HeartbeatRequest is the body of POST /heartbeat and /v1/heartbeat. A body
// without schema_version is v1 (the warp#683 contract). Unknown fields are
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
	// HookSeen and HookEvents are optional (issue 8): whether the agent's
	// hook fired since the loop started, and hook events since the previous POST.
	HookSeen   *bool `json:"hook_seen,omitempty"`
	HookEvents int64 `json:"hook_events,omitempty"`
}

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
	Window  string          `json:"window"`
	Hosts   []HostAdoption  `json:"hosts"`
	Summary AdoptionSummary `json:"summary"`
}

// ModeBody is the answer of GET /v1/mode and the body of PUT /v1/mode.
type ModeBody struct {
	Mode  string `json:"mode"`
	Force bool   `json:"force,omitempty"`
}

// FromTicketView converts a domain view to the wire form.
func FromTicketView(v warp.TicketView) Ticket {
	t := Ticket{
		ID: v.Ticket.ID, Title: v.Ticket.Title, Labels: v.Ticket.Labels, State: string(v.Ticket.State),
		Epoch: v.Ticket.Epoch, CreatedAt: v.Ticket.CreatedAt, UpdatedAt: v.Ticket.UpdatedAt, Verdict: string(v.Verdict),
	}
	if t.Labels == nil {
		t.Labels = []string{}
	}
	if v.Lease != nil {
		l := FromLease(*v.Lease)
		t.Lease = &l
	}
	return t
}

// FromLease converts a domain lease to the wire form.
func FromLease(l warp.Lease) Lease {
	return Lease{
		Epoch: l.Epoch, Agent: l.Agent, Host: l.Host, State: string(l.State),
		ClaimedAt: l.ClaimedAt, LastHeartbeatAt: l.LastHeartbeatAt, LastActivityAt: l.LastActivityAt,
		SchemaVersion: l.SchemaVersion, InFlight: l.InFlight, FirstV2At: optTime(l.FirstV2At),
		ExpiresAt: l.ExpiresAt, Exit: l.Exit, ExitedAt: optTime(l.ExitedAt), EndedAt: optTime(l.EndedAt),
		EndReason: l.EndReason, FallbackExtended: l.FallbackExtended, PRURL: l.PRURL,
		HookSeen: string(l.HookSeen), HookEvents: l.HookEvents,
	}
}

// ToLease converts a wire lease back to the domain form, for clients that
// apply domain rules (warp stale-unlock uses warp.ProgressAt and Effective).
func ToLease(ticket string, l Lease) warp.Lease {
	return warp.Lease{
		Ticket: ticket, Epoch: l.Epoch, Agent: l.Agent, Host: l.Host, State: warp.LeaseState(l.State),
		ClaimedAt: l.ClaimedAt, LastHeartbeatAt: l.LastHeartbeatAt, LastActivityAt: l.LastActivityAt,
		SchemaVersion: l.SchemaVersion, InFlight: l.InFlight, FirstV2At: derefTime(l.FirstV2At),
		ExpiresAt: l.ExpiresAt, Exit: l.Exit, ExitedAt: derefTime(l.ExitedAt), EndedAt: derefTime(l.EndedAt),
		EndReason: l.EndReason, FallbackExtended: l.FallbackExtended, PRURL: l.PRURL,
		HookSeen: warp.HookSeen(l.HookSeen), HookEvents: l.HookEvents,
	}
}

// FromEvent converts a domain event to the wire form.
func FromEvent(e warp.Event) Event {
	return Event{ID: e.ID, Ticket: e.Ticket, Epoch: e.Epoch, Kind: string(e.Kind), At: e.At, Data: e.Data}
}

// FromAdoption converts the domain adoption answer to the wire form.
func FromAdoption(a warp.Adoption) Adoption {
	out := Adoption{Window: a.Window.String(), Hosts: make([]HostAdoption, len(a.Hosts)),
		Summary: AdoptionSummary{Hosts: a.HostCount, V2Hosts: a.V2Hosts, ReadyForActivityMode: a.ReadyForActivityMode}}
	for i, h := range a.Hosts {
		out.Hosts[i] = HostAdoption{Host: h.Host, LastSchemaVersion: h.LastSchemaVersion, LastSeen: h.LastSeen, V1Count: h.V1Count, V2Count: h.V2Count}
	}
	return out
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func derefTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
