package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Error codes of the wire format: an error answer's body is
// {"error":{"code","message","detail"}}, and APIError.Code is its code.
const (
	// CodeInvalid answers a request that is malformed or out of range: 400.
	CodeInvalid = "invalid"
	// CodeUnsupportedSchema answers a heartbeat whose schema_version the
	// server does not speak: 400.
	CodeUnsupportedSchema = "unsupported_schema_version"
	// CodeNotFound answers a request for a ticket (or lease) that does not
	// exist: 404.
	CodeNotFound = "not_found"
	// CodeNoOpenTicket answers a claim of the next ticket when no open
	// ticket carries the labels asked for: 404.
	CodeNoOpenTicket = "no_open_ticket"
	// CodeConflict answers a write that collides with the current state
	// (claiming a claimed ticket, creating a ticket id twice): 409.
	CodeConflict = "conflict"
	// CodeStaleEpoch answers a write to a lease epoch that is not the
	// ticket's current one: 409.
	CodeStaleEpoch = "stale_epoch"
	// CodeNotHolder answers a write to a lease by a token (or without the
	// lease secret) that does not hold it: 409.
	CodeNotHolder = "not_holder"
	// CodeTooManyHosts answers an agent token that named more distinct
	// hosts than the server allows: 429.
	CodeTooManyHosts = "too_many_hosts"
	// CodeLeaseEnded answers a write to a lease that was released,
	// completed or lapsed; the answer's detail says which: 410.
	CodeLeaseEnded = "lease_ended"
	// CodeAdoptionIncomplete answers a switch to activity mode while hosts
	// still send v1 heartbeats, unless forced: 409.
	CodeAdoptionIncomplete = "adoption_incomplete"
	// CodeUnauthorized answers a missing or unknown bearer token: 401.
	CodeUnauthorized = "unauthorized"
	// CodeForbidden answers a token whose role may not make the call: 403.
	CodeForbidden = "forbidden"
	// CodeBodyTooLarge answers a request body over the server's limit: 413.
	CodeBodyTooLarge = "body_too_large"
	// CodeMethodNotAllowed answers a known path called with the wrong
	// method: 405.
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeUnavailable answers while the server's database cannot be
	// reached: 503; retry.
	CodeUnavailable = "unavailable"
	// CodeInternal answers a failure of the server itself: 500.
	CodeInternal = "internal"
)

// Error values: an *APIError unwraps to the one of its code, so callers
// test answers with errors.Is(err, client.ErrLeaseEnded) and the like.
var (
	// ErrInvalid is the error value of CodeInvalid.
	ErrInvalid = errors.New("invalid request")
	// ErrUnsupportedSchema is the error value of CodeUnsupportedSchema.
	ErrUnsupportedSchema = errors.New("unsupported schema version")
	// ErrNotFound is the error value of CodeNotFound.
	ErrNotFound = errors.New("not found")
	// ErrNoOpenTicket is the error value of CodeNoOpenTicket.
	ErrNoOpenTicket = errors.New("no open ticket")
	// ErrConflict is the error value of CodeConflict.
	ErrConflict = errors.New("conflict")
	// ErrStaleEpoch is the error value of CodeStaleEpoch.
	ErrStaleEpoch = errors.New("stale epoch")
	// ErrNotHolder is the error value of CodeNotHolder.
	ErrNotHolder = errors.New("not the holder")
	// ErrTooManyHosts is the error value of CodeTooManyHosts.
	ErrTooManyHosts = errors.New("too many hosts")
	// ErrLeaseEnded is the error value of CodeLeaseEnded.
	ErrLeaseEnded = errors.New("lease ended")
	// ErrAdoptionIncomplete is the error value of CodeAdoptionIncomplete.
	ErrAdoptionIncomplete = errors.New("adoption incomplete")
	// ErrUnauthorized is the error value of CodeUnauthorized.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden is the error value of CodeForbidden.
	ErrForbidden = errors.New("forbidden")
	// ErrBodyTooLarge is the error value of CodeBodyTooLarge.
	ErrBodyTooLarge = errors.New("request body too large")
	// ErrMethodNotAllowed is the error value of CodeMethodNotAllowed.
	ErrMethodNotAllowed = errors.New("method not allowed")
	// ErrUnavailable is the error value of CodeUnavailable.
	ErrUnavailable = errors.New("unavailable")
)

// codes is the one table of the wire's error codes: each code's error
// value and the HTTP status the server answers it with. The server's
// table (which of its errors answers which code) takes the statuses from
// here.
var codes = []struct {
	code   string
	err    error
	status int
}{
	{CodeInvalid, ErrInvalid, http.StatusBadRequest},
	{CodeUnsupportedSchema, ErrUnsupportedSchema, http.StatusBadRequest},
	{CodeNotFound, ErrNotFound, http.StatusNotFound},
	{CodeNoOpenTicket, ErrNoOpenTicket, http.StatusNotFound},
	{CodeConflict, ErrConflict, http.StatusConflict},
	{CodeStaleEpoch, ErrStaleEpoch, http.StatusConflict},
	{CodeNotHolder, ErrNotHolder, http.StatusConflict},
	{CodeTooManyHosts, ErrTooManyHosts, http.StatusTooManyRequests},
	{CodeLeaseEnded, ErrLeaseEnded, http.StatusGone},
	{CodeAdoptionIncomplete, ErrAdoptionIncomplete, http.StatusConflict},
	{CodeUnavailable, ErrUnavailable, http.StatusServiceUnavailable},
	{CodeUnauthorized, ErrUnauthorized, http.StatusUnauthorized},
	{CodeForbidden, ErrForbidden, http.StatusForbidden},
	{CodeBodyTooLarge, ErrBodyTooLarge, http.StatusRequestEntityTooLarge},
	{CodeMethodNotAllowed, ErrMethodNotAllowed, http.StatusMethodNotAllowed},
	{CodeInternal, nil, http.StatusInternalServerError},
}

// ErrorOf returns the error value of a wire code, nil for internal and for
// codes this client does not know.
func ErrorOf(code string) error {
	for _, c := range codes {
		if c.code == code {
			return c.err
		}
	}
	return nil
}

// StatusOf returns the HTTP status the server answers code with, 500 for
// codes this client does not know.
func StatusOf(code string) int {
	for _, c := range codes {
		if c.code == code {
			return c.status
		}
	}
	return http.StatusInternalServerError
}

// CodeForStatus returns the first code answered with the HTTP status,
// internal when none is: the best guess for an answer without an error
// body.
func CodeForStatus(status int) string {
	for _, c := range codes {
		if c.status == status {
			return c.code
		}
	}
	return CodeInternal
}

// ErrorBody is the JSON body of every error answer.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the inner object of ErrorBody.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Detail carries facts a client acts on (lease_ended: lease_state, and
	// for the holder end_reason); absent when there are none.
	Detail map[string]string `json:"detail,omitempty"`
}

// Keys of ErrorDetail.Detail.
const (
	// DetailLeaseState is the detail of a lease_ended answer that says how
	// the lease ended: LeaseReleased, LeaseCompleted or LeaseLapsed.
	DetailLeaseState = "lease_state"
	// DetailEndReason is the detail of a lease_ended answer, to the
	// lease's holder, that gives the lapse or release reason.
	DetailEndReason = "end_reason"
)

// APIError is an error answer as the client sees it. It unwraps to the
// error value of its code (ErrorOf), so errors.Is(err, ErrLeaseEnded)
// works.
type APIError struct {
	Status  int
	Code    string
	Message string
	Detail  map[string]string
	// Guessed says the answer carried no warp error body, so Code is
	// CodeForStatus's guess: a proxy's or another server's page, not
	// warp's word. A client that acts for good on a code (a loop that
	// exits) should not act on a guess.
	Guessed bool
}

// Error returns "warp: MESSAGE (STATUS CODE)".
func (e *APIError) Error() string {
	return fmt.Sprintf("warp: %s (%d %s)", e.Message, e.Status, e.Code)
}

// DetailValue returns e's detail key, "" when e is nil or has none.
func (e *APIError) DetailValue(key string) string {
	if e == nil {
		return ""
	}
	return e.Detail[key]
}

// Unwrap returns the error value of e's code, nil when it has none.
func (e *APIError) Unwrap() error { return ErrorOf(e.Code) }

// Decode turns one answer of method path (its status and body) into the
// caller's result: an *APIError for a status of 300 or more (from the
// error body, or a best guess from the status when there is none), else
// the body decoded into out (when not nil). Client.Do decodes every answer
// here; a caller with a transport of its own can too.
func Decode(method, path string, status int, data []byte, out any) error {
	if status >= 300 {
		var eb ErrorBody
		if json.Unmarshal(data, &eb) == nil && eb.Error.Code != "" {
			return &APIError{Status: status, Code: eb.Error.Code, Message: eb.Error.Message, Detail: eb.Error.Detail}
		}
		msg := strings.TrimSpace(string(data))
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return &APIError{Status: status, Code: CodeForStatus(status), Message: fmt.Sprintf("%s %s: %s", method, path, msg), Guessed: true}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}
