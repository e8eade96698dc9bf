package warp

import (
	"encoding/json"
	"fmt"
	"time"
)

// EventData is the detail of one event kind: each kind has its type
// below, and an Event's Data holds the type of its Kind. The detail
// turns into JSON only where it leaves the process: the stores
// (EncodeEventData, DecodeEventData) and the HTTP API (EventFields).
// The JSON names are part of the contract (docs/DESIGN.md, "Events").
type EventData interface {
	EventKind() EventKind
}

// NewEvent is the event of ticket's lease epoch at at with detail d, its
// Kind d's.
func NewEvent(ticket string, epoch int64, at time.Time, d EventData) Event {
	return Event{Ticket: ticket, Epoch: epoch, Kind: d.EventKind(), At: at, Data: d}
}

// CreatedData: a ticket was created.
type CreatedData struct {
	Title string `json:"title"`
}

// ClaimedData: a lease was granted.
type ClaimedData struct {
	Agent string `json:"agent"`
	Host  string `json:"host"`
}

// FirstV2HeartbeatData: a lease's first schema-v2 heartbeat.
type FirstV2HeartbeatData struct {
	Host string `json:"host"`
}

// ExitReportData: the loop reported its agent's exit.
type ExitReportData struct {
	Exit string `json:"exit"`
	Host string `json:"host"`
}

// LapsedData: a lease's expiry passed; Reason is a Lapse* constant and
// FallbackExtended whether the v1 fallback had kept it alive.
type LapsedData struct {
	Reason           string    `json:"reason"`
	FallbackExtended bool      `json:"fallback_extended"`
	Agent            string    `json:"agent"`
	Host             string    `json:"host"`
	LastActivityAt   time.Time `json:"last_activity_at"`
	LastHeartbeatAt  time.Time `json:"last_heartbeat_at"`
}

// ReleasedData: a lease was released, by its holder or an operator (By).
type ReleasedData struct {
	Reason string `json:"reason"`
	Agent  string `json:"agent"`
	Host   string `json:"host"`
	By     string `json:"by,omitempty"`
}

// CompletedData: a lease completed its ticket.
type CompletedData struct {
	PRURL string `json:"pr_url"`
	Agent string `json:"agent"`
	Host  string `json:"host"`
	By    string `json:"by,omitempty"`
}

// VerdictChangedData: the verdict pass recorded a lease's new verdict,
// true since Since.
type VerdictChangedData struct {
	From  Verdict   `json:"from"`
	To    Verdict   `json:"to"`
	Since time.Time `json:"since"`
	Agent string    `json:"agent"`
	Host  string    `json:"host"`
}

// ModeChangedData: the expiry mode changed (a global event).
type ModeChangedData struct {
	From   Mode `json:"from"`
	To     Mode `json:"to"`
	Forced bool `json:"forced"`
}

// EditedData: an operator changed a ticket's title or labels; a field is
// nil when it did not change. Labels is the new list, comma-separated.
type EditedData struct {
	Title  *string `json:"title,omitempty"`
	Labels *string `json:"labels,omitempty"`
	By     string  `json:"by,omitempty"`
}

// ReopenedData: a completed, cancelled or blocked ticket turned open.
type ReopenedData struct {
	From   TicketState `json:"from"`
	Reason string      `json:"reason"`
	By     string      `json:"by,omitempty"`
}

// CancelledData: a ticket was cancelled.
type CancelledData struct {
	From   TicketState `json:"from"`
	Reason string      `json:"reason"`
	By     string      `json:"by,omitempty"`
}

// BlockedData: the attempt cap blocked a ticket after Attempts failed
// attempts; Reason says how the last ones ended (AttemptsReason).
type BlockedData struct {
	Attempts    int    `json:"attempts"`
	MaxAttempts int    `json:"max_attempts"`
	Reason      string `json:"reason"`
}

// SnapshotData: an attempt's loop reported its worktree's snapshot.
type SnapshotData struct {
	State  string `json:"state"`
	Commit string `json:"commit,omitempty"`
	Host   string `json:"host"`
}

// HostAlarmData: a host's alarm was raised (a global event).
type HostAlarmData struct {
	Host    string `json:"host"`
	Leases  int    `json:"leases"`
	Stale   int    `json:"stale"`
	Message string `json:"message"`
}

// HostAlarmClearedData: a host's alarm, raised at Since, cleared.
type HostAlarmClearedData struct {
	Host   string    `json:"host"`
	Leases int       `json:"leases"`
	Stale  int       `json:"stale"`
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
}

// OtherData is the detail of a kind this build does not know: an event a
// newer warp wrote into a shared database. It keeps the fields as read.
type OtherData struct {
	Kind   EventKind
	Fields map[string]any
}

// MarshalJSON writes the fields as read.
func (d OtherData) MarshalJSON() ([]byte, error) {
	if d.Fields == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(d.Fields)
}

func (CreatedData) EventKind() EventKind          { return EventCreated }
func (ClaimedData) EventKind() EventKind          { return EventClaimed }
func (FirstV2HeartbeatData) EventKind() EventKind { return EventFirstV2Heartbeat }
func (ExitReportData) EventKind() EventKind       { return EventExitReport }
func (LapsedData) EventKind() EventKind           { return EventLapsed }
func (ReleasedData) EventKind() EventKind         { return EventReleased }
func (CompletedData) EventKind() EventKind        { return EventCompleted }
func (VerdictChangedData) EventKind() EventKind   { return EventVerdictChanged }
func (ModeChangedData) EventKind() EventKind      { return EventModeChanged }
func (EditedData) EventKind() EventKind           { return EventEdited }
func (ReopenedData) EventKind() EventKind         { return EventReopened }
func (CancelledData) EventKind() EventKind        { return EventCancelled }
func (BlockedData) EventKind() EventKind          { return EventBlocked }
func (SnapshotData) EventKind() EventKind         { return EventSnapshot }
func (HostAlarmData) EventKind() EventKind        { return EventHostAlarm }
func (HostAlarmClearedData) EventKind() EventKind { return EventHostAlarmCleared }
func (d OtherData) EventKind() EventKind          { return d.Kind }

// eventTypes decodes the stored detail of each known kind.
var eventTypes = map[EventKind]func([]byte) (EventData, error){
	EventCreated:          decodeAs[CreatedData],
	EventClaimed:          decodeAs[ClaimedData],
	EventFirstV2Heartbeat: decodeAs[FirstV2HeartbeatData],
	EventExitReport:       decodeAs[ExitReportData],
	EventLapsed:           decodeAs[LapsedData],
	EventReleased:         decodeAs[ReleasedData],
	EventCompleted:        decodeAs[CompletedData],
	EventVerdictChanged:   decodeAs[VerdictChangedData],
	EventModeChanged:      decodeAs[ModeChangedData],
	EventEdited:           decodeAs[EditedData],
	EventReopened:         decodeAs[ReopenedData],
	EventCancelled:        decodeAs[CancelledData],
	EventBlocked:          decodeAs[BlockedData],
	EventSnapshot:         decodeAs[SnapshotData],
	EventHostAlarm:        decodeAs[HostAlarmData],
	EventHostAlarmCleared: decodeAs[HostAlarmClearedData],
}

func decodeAs[T EventData](b []byte) (EventData, error) {
	var d T
	if len(b) > 0 {
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// EncodeEventData is e's detail as the stores keep it: a JSON object.
// A detail whose type is not its event's kind is refused: that is a bug,
// and the history must not record one kind with another's fields.
func EncodeEventData(e Event) ([]byte, error) {
	if e.Data == nil {
		return nil, fmt.Errorf("%s event: no detail", e.Kind)
	}
	if k := e.Data.EventKind(); k != e.Kind {
		return nil, fmt.Errorf("%s event: the detail is of kind %s", e.Kind, k)
	}
	return json.Marshal(e.Data)
}

// DecodeEventData reads a stored detail of kind back into its type; a
// kind this build does not know comes back as OtherData. An empty detail
// is the kind's zero value.
func DecodeEventData(kind EventKind, b []byte) (EventData, error) {
	dec, ok := eventTypes[kind]
	if !ok {
		o := OtherData{Kind: kind}
		if len(b) > 0 {
			if err := json.Unmarshal(b, &o.Fields); err != nil {
				return nil, fmt.Errorf("decode %s event: %w", kind, err)
			}
		}
		return o, nil
	}
	d, err := dec(b)
	if err != nil {
		return nil, fmt.Errorf("decode %s event: %w", kind, err)
	}
	return d, nil
}

// EventFields is e's detail as the HTTP API sends it: the JSON object, as
// a map (the public client's Event.Data).
func EventFields(e Event) (map[string]any, error) {
	if o, ok := e.Data.(OtherData); ok {
		return o.Fields, nil
	}
	b, err := EncodeEventData(e)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("%s event: %w", e.Kind, err)
	}
	return out, nil
}

// withOperator is d with by as its operator, for the kinds an operator's
// write records; other kinds come back unchanged.
func withOperator(d EventData, by string) EventData {
	switch d := d.(type) {
	case ReleasedData:
		d.By = by
		return d
	case CompletedData:
		d.By = by
		return d
	case EditedData:
		d.By = by
		return d
	case ReopenedData:
		d.By = by
		return d
	case CancelledData:
		d.By = by
		return d
	}
	return d
}
