package httpapi

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gyrum-labs/warp/internal/warp"
)

// Error codes of the wire format: {"error":{"code","message"}}.
const (
	CodeInvalid            = "invalid"
	CodeUnsupportedSchema  = "unsupported_schema_version"
	CodeNotFound           = "not_found"
	CodeNoOpenTicket       = "no_open_ticket"
	CodeConflict           = "conflict"
	CodeStaleEpoch         = "stale_epoch"
	CodeLeaseEnded         = "lease_ended"
	CodeAdoptionIncomplete = "adoption_incomplete"
	CodeUnauthorized       = "unauthorized"
	CodeForbidden          = "forbidden"
	CodeBodyTooLarge       = "body_too_large"
	CodeMethodNotAllowed   = "method_not_allowed"
	CodeUnavailable        = "unavailable"
	CodeInternal           = "internal"
)

// Errors of the HTTP layer itself, with no domain sentinel. They have rows
// in the error table like the domain's, so the server answers them through
// ErrorStatus and the client's APIError unwraps to them.
var (
	// ErrUnauthorized reports a missing or unknown bearer token.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden reports a token whose role may not make the call.
	ErrForbidden = errors.New("forbidden")
	// ErrBodyTooLarge reports a request body over MaxBodyBytes.
	ErrBodyTooLarge = errors.New("request body too large")
	// ErrMethodNotAllowed reports a known path called with the wrong method.
	ErrMethodNotAllowed = errors.New("method not allowed")
)

// errorRow is one line of the single error → status table.
type errorRow struct {
	kind   error // sentinel; nil for internal
	code   string
	status int
}

// errorTable maps domain sentinels to wire codes and HTTP statuses, both
// ways: the server answers with it, the client turns answers back into
// errors that match the sentinels with errors.Is.
var errorTable = []errorRow{
	{warp.ErrInvalid, CodeInvalid, http.StatusBadRequest},
	{warp.ErrUnsupportedSchema, CodeUnsupportedSchema, http.StatusBadRequest},
	{warp.ErrNotFound, CodeNotFound, http.StatusNotFound},
	{warp.ErrNoOpenTicket, CodeNoOpenTicket, http.StatusNotFound},
	{warp.ErrConflict, CodeConflict, http.StatusConflict},
	{warp.ErrStaleEpoch, CodeStaleEpoch, http.StatusConflict},
	{warp.ErrLeaseEnded, CodeLeaseEnded, http.StatusGone},
	{warp.ErrAdoptionIncomplete, CodeAdoptionIncomplete, http.StatusConflict},
	{warp.ErrUnavailable, CodeUnavailable, http.StatusServiceUnavailable},
	{ErrUnauthorized, CodeUnauthorized, http.StatusUnauthorized},
	{ErrForbidden, CodeForbidden, http.StatusForbidden},
	{ErrBodyTooLarge, CodeBodyTooLarge, http.StatusRequestEntityTooLarge},
	{ErrMethodNotAllowed, CodeMethodNotAllowed, http.StatusMethodNotAllowed},
	{nil, CodeInternal, http.StatusInternalServerError},
}

// ErrorStatus returns the wire code and HTTP status for err: the row of the
// first sentinel err matches, else internal / 500.
func ErrorStatus(err error) (code string, status int) {
	for _, r := range errorTable {
		if r.kind != nil && errors.Is(err, r.kind) {
			return r.code, r.status
		}
	}
	return CodeInternal, http.StatusInternalServerError
}

// ErrorBody is the JSON body of every error answer.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the inner object of ErrorBody.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// APIError is an error answer as the client sees it. It unwraps to the
// domain sentinel of its code, so errors.Is(err, warp.ErrLeaseEnded) works
// on the agent side too.
type APIError struct {
	Status  int
	Code    string
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("warp: %s (%d %s)", e.Message, e.Status, e.Code)
}

// Unwrap returns the domain sentinel of e's code, nil when it has none.
func (e *APIError) Unwrap() error {
	for _, r := range errorTable {
		if r.code == e.Code {
			return r.kind
		}
	}
	return nil
}
