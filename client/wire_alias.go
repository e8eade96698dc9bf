package client

// The wire format lives in package wire (no transport, so the heartbeat
// loop can use it without net/http); the client re-exports all of it under
// the same names. See package wire for each one's documentation.

import "github.com/gyrum-labs/warp/client/wire"

// Wire types.
type (
	APIError            = wire.APIError
	Adoption            = wire.Adoption
	AdoptionSummary     = wire.AdoptionSummary
	ClaimNextRequest    = wire.ClaimNextRequest
	ClaimRequest        = wire.ClaimRequest
	CompleteRequest     = wire.CompleteRequest
	CreateTicketRequest = wire.CreateTicketRequest
	ErrorBody           = wire.ErrorBody
	ErrorDetail         = wire.ErrorDetail
	Event               = wire.Event
	EventList           = wire.EventList
	Health              = wire.Health
	HeartbeatRequest    = wire.HeartbeatRequest
	HeartbeatResponse   = wire.HeartbeatResponse
	Host                = wire.Host
	HostAdoption        = wire.HostAdoption
	HostAlarm           = wire.HostAlarm
	HostHook            = wire.HostHook
	HostList            = wire.HostList
	Lease               = wire.Lease
	ModeBody            = wire.ModeBody
	ModeChange          = wire.ModeChange
	ModeHistory         = wire.ModeHistory
	ReleaseRequest      = wire.ReleaseRequest
	Ticket              = wire.Ticket
	TicketList          = wire.TicketList
)

// Error codes, detail keys and the lease-secret header.
const (
	CodeAdoptionIncomplete = wire.CodeAdoptionIncomplete
	CodeBodyTooLarge       = wire.CodeBodyTooLarge
	CodeConflict           = wire.CodeConflict
	CodeForbidden          = wire.CodeForbidden
	CodeInternal           = wire.CodeInternal
	CodeInvalid            = wire.CodeInvalid
	CodeLeaseEnded         = wire.CodeLeaseEnded
	CodeMethodNotAllowed   = wire.CodeMethodNotAllowed
	CodeNoOpenTicket       = wire.CodeNoOpenTicket
	CodeNotFound           = wire.CodeNotFound
	CodeNotHolder          = wire.CodeNotHolder
	CodeStaleEpoch         = wire.CodeStaleEpoch
	CodeTooManyHosts       = wire.CodeTooManyHosts
	CodeUnauthorized       = wire.CodeUnauthorized
	CodeUnavailable        = wire.CodeUnavailable
	CodeUnsupportedSchema  = wire.CodeUnsupportedSchema
	DetailEndReason        = wire.DetailEndReason
	DetailLeaseState       = wire.DetailLeaseState
	ExitParentExited       = wire.ExitParentExited
	ExitWorktreeGone       = wire.ExitWorktreeGone
	LeaseHeld              = wire.LeaseHeld
	LeaseReleased          = wire.LeaseReleased
	LeaseCompleted         = wire.LeaseCompleted
	LeaseLapsed            = wire.LeaseLapsed
	HeaderLeaseSecret      = wire.HeaderLeaseSecret
	LeaseSecretNew         = wire.LeaseSecretNew
)

// Error values: an *APIError unwraps to the one of its code.
var (
	ErrAdoptionIncomplete = wire.ErrAdoptionIncomplete
	ErrBodyTooLarge       = wire.ErrBodyTooLarge
	ErrConflict           = wire.ErrConflict
	ErrForbidden          = wire.ErrForbidden
	ErrInvalid            = wire.ErrInvalid
	ErrLeaseEnded         = wire.ErrLeaseEnded
	ErrMethodNotAllowed   = wire.ErrMethodNotAllowed
	ErrNoOpenTicket       = wire.ErrNoOpenTicket
	ErrNotFound           = wire.ErrNotFound
	ErrNotHolder          = wire.ErrNotHolder
	ErrStaleEpoch         = wire.ErrStaleEpoch
	ErrTooManyHosts       = wire.ErrTooManyHosts
	ErrUnauthorized       = wire.ErrUnauthorized
	ErrUnavailable        = wire.ErrUnavailable
	ErrUnsupportedSchema  = wire.ErrUnsupportedSchema
)

// ErrorOf returns the error value of a wire code, nil for internal and for
// codes this client does not know.
func ErrorOf(code string) error { return wire.ErrorOf(code) }

// StatusOf returns the HTTP status the server answers code with, 500 for
// codes this client does not know.
func StatusOf(code string) int { return wire.StatusOf(code) }
