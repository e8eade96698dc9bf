// Package httpkit is what warp's HTTP API server (internal/httpapi) and the
// handlers served beside it (internal/dashboard) share without depending on
// each other: the one table from errors to wire codes and HTTP statuses,
// and cursor paging of sorted listings.
package httpkit

import (
	"errors"
	"net/http"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/warp"
)

// Error codes of the wire format: {"error":{"code","message"}}, as the
// public client package defines them.
const (
	CodeInvalid            = client.CodeInvalid
	CodeUnsupportedSchema  = client.CodeUnsupportedSchema
	CodeNotFound           = client.CodeNotFound
	CodeNoOpenTicket       = client.CodeNoOpenTicket
	CodeConflict           = client.CodeConflict
	CodeStaleEpoch         = client.CodeStaleEpoch
	CodeNotHolder          = client.CodeNotHolder
	CodeTooManyHosts       = client.CodeTooManyHosts
	CodeLeaseEnded         = client.CodeLeaseEnded
	CodeAdoptionIncomplete = client.CodeAdoptionIncomplete
	CodeUnauthorized       = client.CodeUnauthorized
	CodeForbidden          = client.CodeForbidden
	CodeBodyTooLarge       = client.CodeBodyTooLarge
	CodeMethodNotAllowed   = client.CodeMethodNotAllowed
	CodeUnavailable        = client.CodeUnavailable
	CodeInternal           = client.CodeInternal
)

// Errors of the HTTP layer itself, with no domain sentinel. They have rows
// in the error table like the domain's, so servers answer them through
// ErrorStatus; the public client package reads the codes back into its own
// error values.
var (
	// ErrUnauthorized reports a missing or unknown bearer token.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden reports a token whose role may not make the call.
	ErrForbidden = errors.New("forbidden")
	// ErrBodyTooLarge reports a request body over the server's limit.
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

// errorTable maps domain sentinels to wire codes and HTTP statuses: servers
// answer with it (ErrorStatus); package client keeps the same codes and
// statuses (a test checks) and its own error values for them.
var errorTable = []errorRow{
	{warp.ErrInvalid, CodeInvalid, http.StatusBadRequest},
	{warp.ErrUnsupportedSchema, CodeUnsupportedSchema, http.StatusBadRequest},
	{warp.ErrNotFound, CodeNotFound, http.StatusNotFound},
	{warp.ErrNoOpenTicket, CodeNoOpenTicket, http.StatusNotFound},
	{warp.ErrConflict, CodeConflict, http.StatusConflict},
	{warp.ErrStaleEpoch, CodeStaleEpoch, http.StatusConflict},
	{warp.ErrNotHolder, CodeNotHolder, http.StatusConflict},
	{warp.ErrTooManyHosts, CodeTooManyHosts, http.StatusTooManyRequests},
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

// Rows returns the table's codes with their HTTP statuses, in order (the
// test that keeps the public client package's table equal reads it).
func Rows() (codes []string, statuses []int) {
	for _, r := range errorTable {
		codes, statuses = append(codes, r.code), append(statuses, r.status)
	}
	return codes, statuses
}
