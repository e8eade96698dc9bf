package httpapi

import (
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// MaxBodyBytes is the request body limit; larger bodies get 413.
const MaxBodyBytes = 64 << 10

// FromTicketView converts a domain view to the wire form.
func FromTicketView(v warp.TicketView) Ticket {
	t := Ticket{
		ID: v.Ticket.ID, Title: v.Ticket.Title, Labels: v.Ticket.Labels, State: string(v.Ticket.State),
		Epoch: v.Ticket.Epoch, CreatedAt: v.Ticket.CreatedAt, UpdatedAt: v.Ticket.UpdatedAt, Verdict: string(v.Verdict),
		LeaseSecret: v.LeaseSecret,
	}
	if t.Labels == nil {
		t.Labels = []string{}
	}
	if v.Lease != nil {
		l := FromLease(*v.Lease)
		t.Lease = &l
	}
	for _, a := range v.Attempts {
		t.Attempts = append(t.Attempts, FromAttempt(a))
	}
	return t
}

// FromAttempt converts a domain attempt to the wire form.
func FromAttempt(a warp.Attempt) Attempt {
	l, r := a.Lease, a.Record
	out := Attempt{Number: l.Epoch, Agent: l.Agent, Host: l.Host, State: string(l.State), StartedAt: l.ClaimedAt,
		EndedAt: optTime(l.EndedAt), EndReason: l.EndReason, Exit: l.Exit, EndedBy: r.EndedBy, EndVerdict: r.EndVerdict,
		Note: r.Note, NoteAt: optTime(r.NoteAt), PRURL: l.PRURL}
	if r.Snapshot.State != "" {
		s := FromSnapshot(r.Snapshot)
		out.Snapshot = &s
	}
	return out
}

// FromSnapshot converts a domain snapshot to the wire form.
func FromSnapshot(s warp.Snapshot) Snapshot {
	return Snapshot{State: s.State, Commit: s.Commit, Ref: s.Ref, Base: s.Base, Branch: s.Branch, Remote: s.Remote,
		Pushed: s.Pushed, Host: s.Host, Detail: s.Detail, At: optTime(s.At)}
}

// FromLease converts a domain lease to the wire form.
func FromLease(l warp.Lease) Lease {
	return Lease{
		Epoch: l.Epoch, Agent: l.Agent, Host: l.Host, State: string(l.State),
		ClaimedAt: l.ClaimedAt, LastHeartbeatAt: l.LastHeartbeatAt, LastActivityAt: l.LastActivityAt,
		SchemaVersion: l.SchemaVersion, InFlight: l.InFlight, FirstV2At: optTime(l.FirstV2At), RefreshedAt: optTime(l.RefreshedAt),
		ExpiresAt: l.ExpiresAt, Exit: l.Exit, ExitedAt: optTime(l.ExitedAt), EndedAt: optTime(l.EndedAt),
		EndReason: l.EndReason, FallbackExtended: l.FallbackExtended, PRURL: l.PRURL,
		HookSeen: string(l.HookSeen), HookEvents: l.HookEvents, LastProgressAt: optTime(l.LastProgressAt),
		Loop: fromLoop(l.Loop),
	}
}

func fromLoop(l warp.Loop) *LoopReport {
	if !l.Looping() {
		return nil
	}
	return &LoopReport{Label: l.Label, Count: l.Count, Error: l.Error}
}

// ToLease converts a wire lease back to the domain form, for clients that
// apply domain rules (warp stale-unlock uses warp.ProgressAt and Effective).
func ToLease(ticket string, l Lease) warp.Lease {
	return warp.Lease{
		Ticket: ticket, Epoch: l.Epoch, Agent: l.Agent, Host: l.Host, State: warp.LeaseState(l.State),
		ClaimedAt: l.ClaimedAt, LastHeartbeatAt: l.LastHeartbeatAt, LastActivityAt: l.LastActivityAt,
		SchemaVersion: l.SchemaVersion, InFlight: l.InFlight, FirstV2At: derefTime(l.FirstV2At), RefreshedAt: derefTime(l.RefreshedAt),
		ExpiresAt: l.ExpiresAt, Exit: l.Exit, ExitedAt: derefTime(l.ExitedAt), EndedAt: derefTime(l.EndedAt),
		EndReason: l.EndReason, FallbackExtended: l.FallbackExtended, PRURL: l.PRURL,
		HookSeen: warp.HookSeen(l.HookSeen), HookEvents: l.HookEvents, LastProgressAt: derefTime(l.LastProgressAt),
		Loop: toLoop(l.Loop),
	}
}

// FromEvent converts a domain event to the wire form. The events come
// from the store, whose details always match their kinds; a detail that
// cannot be encoded is sent as {"error": ...} rather than failing the list.
func FromEvent(e warp.Event) Event {
	data, err := warp.EventFields(e)
	if err != nil {
		data = map[string]any{"error": err.Error()}
	}
	return Event{ID: e.ID, Ticket: e.Ticket, Epoch: e.Epoch, Kind: string(e.Kind), At: e.At, Data: data}
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

func toLoop(l *LoopReport) warp.Loop {
	if l == nil {
		return warp.Loop{}
	}
	return warp.Loop{Label: l.Label, Count: l.Count, Error: l.Error}
}
