package warp

import (
	"errors"
	"fmt"
)

// Sentinel errors of the domain. Adapters translate their driver errors into
// these at their boundary; the HTTP layer maps them to status codes in one
// table. Callers test them with errors.Is, never by message.
var (
	// ErrInvalid reports a request that is malformed or out of range.
	ErrInvalid = errors.New("invalid request")
	// ErrUnsupportedSchema reports a heartbeat schema_version the server does not speak.
	ErrUnsupportedSchema = errors.New("unsupported schema version")
	// ErrNotFound reports an unknown ticket (or lease).
	ErrNotFound = errors.New("not found")
	// ErrNoOpenTicket reports that claim-next found no open ticket with the labels.
	ErrNoOpenTicket = errors.New("no open ticket")
	// ErrConflict reports a write that collides with the current state:
	// claiming a claimed ticket, creating a ticket id twice.
	ErrConflict = errors.New("conflict")
	// ErrStaleEpoch reports a write that carries an epoch older than the
	// ticket's current lease (the fencing token check).
	ErrStaleEpoch = errors.New("stale epoch")
	// ErrNotHolder reports a write to a lease by an agent that does not hold
	// it (no lease secret, or another token than the claim's).
	ErrNotHolder = errors.New("not the holder")
	// ErrTooManyHosts reports an agent token that named more distinct hosts
	// than the server allows.
	ErrTooManyHosts = errors.New("too many hosts")
	// ErrLeaseEnded reports a write to a lease that was released, completed or lapsed.
	ErrLeaseEnded = errors.New("lease ended")
	// ErrAdoptionIncomplete reports that activity mode was refused because
	// some host still emits v1 heartbeats within the adoption window.
	ErrAdoptionIncomplete = errors.New("adoption incomplete")
	// ErrUnavailable reports that the database could not be reached.
	ErrUnavailable = errors.New("store unavailable")
)

// Error is a domain error with a human message. It wraps one of the sentinel
// errors above so errors.Is keeps working.
type Error struct {
	Kind    error  // one of the sentinels
	Message string // says what went wrong and, where it can, what to do
	// Detail carries facts a client acts on without reading Message
	// (ErrLeaseEnded: "lease_state", and for the holder "end_reason").
	Detail map[string]string
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the sentinel the error belongs to.
func (e *Error) Unwrap() error { return e.Kind }

// Keys of Error.Detail.
const (
	DetailLeaseState = "lease_state" // released, completed or lapsed
	DetailEndReason  = "end_reason"  // the lapse or release reason
)

// Errorf returns an *Error of kind with a formatted message.
func Errorf(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// ErrorMessage returns the human message of err: the Message of an *Error
// anywhere in its chain, else err.Error().
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}
