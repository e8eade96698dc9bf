package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Error codes of the wire format: {"error":{"code","message","detail"}}.
// APIError.Code is one of them.
const (
	CodeInvalid            = "invalid"
	CodeUnsupportedSchema  = "unsupported_schema_version"
	CodeNotFound           = "not_found"
	CodeNoOpenTicket       = "no_open_ticket"
	CodeConflict           = "conflict"
	CodeStaleEpoch         = "stale_epoch"
	CodeNotHolder          = "not_holder"
	CodeTooManyHosts       = "too_many_hosts"
	CodeLeaseEnded         = "lease_ended"
	CodeAdoptionIncomplete = "adoption_incomplete"
	CodeUnauthorized       = "unauthorized"
	CodeForbidden          = "forbidden"
	CodeBodyTooLarge       = "body_too_large"
	CodeMethodNotAllowed   = "method_not_allowed"
	CodeUnavailable        = "unavailable"
	CodeInternal           = "internal"
)

// Error values: an *APIError unwraps to the one of its code, so callers
// test answers with errors.Is(err, client.ErrLeaseEnded) and the like.
var (
	ErrInvalid            = errors.New("invalid request")
	ErrUnsupportedSchema  = errors.New("unsupported schema version")
	ErrNotFound           = errors.New("not found")
	ErrNoOpenTicket       = errors.New("no open ticket")
	ErrConflict           = errors.New("conflict")
	ErrStaleEpoch         = errors.New("stale epoch")
	ErrNotHolder          = errors.New("not the holder")
	ErrTooManyHosts       = errors.New("too many hosts")
	ErrLeaseEnded         = errors.New("lease ended")
	ErrAdoptionIncomplete = errors.New("adoption incomplete")
	ErrUnauthorized       = errors.New("unauthorized")
	ErrForbidden          = errors.New("forbidden")
	ErrBodyTooLarge       = errors.New("request body too large")
	ErrMethodNotAllowed   = errors.New("method not allowed")
	ErrUnavailable        = errors.New("unavailable")
)

// codes is the client's side of the server's error table: each code's
// error value and HTTP status (the server's table, internal/httpkit, is
// checked against it by a test).
var codes = []struct {
	code   string
	err    error
	status int
}{
	{CodeInvalid, ErrInvalid, 400},
	{CodeUnsupportedSchema, ErrUnsupportedSchema, 400},
	{CodeNotFound, ErrNotFound, 404},
	{CodeNoOpenTicket, ErrNoOpenTicket, 404},
	{CodeConflict, ErrConflict, 409},
	{CodeStaleEpoch, ErrStaleEpoch, 409},
	{CodeNotHolder, ErrNotHolder, 409},
	{CodeTooManyHosts, ErrTooManyHosts, 429},
	{CodeLeaseEnded, ErrLeaseEnded, 410},
	{CodeAdoptionIncomplete, ErrAdoptionIncomplete, 409},
	{CodeUnavailable, ErrUnavailable, 503},
	{CodeUnauthorized, ErrUnauthorized, 401},
	{CodeForbidden, ErrForbidden, 403},
	{CodeBodyTooLarge, ErrBodyTooLarge, 413},
	{CodeMethodNotAllowed, ErrMethodNotAllowed, 405},
	{CodeInternal, nil, 500},
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
	return 500
}

// CodeForStatus is the code of the first row with the HTTP status,
// internal when none has it: the best guess for an answer without an
// error body.
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
	DetailLeaseState = "lease_state" // released, completed or lapsed
	DetailEndReason  = "end_reason"  // the lapse or release reason
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
// the body decoded into out (when not nil). Every client of the API, the
// public one and the heartbeat loop's, decodes answers here.
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
