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

// errorRow is one line of the single error table: the error the server
// answers with code.
type errorRow struct {
	kind error
	code string
}

// errorTable maps the domain's sentinels and the HTTP layer's own errors
// to wire codes. Each code's HTTP status and the error value a Go client
// reads it back into are the public client package's (client.StatusOf,
// client.ErrorOf): the server does not keep a second copy of them.
var errorTable = []errorRow{
	{warp.ErrInvalid, CodeInvalid},
	{warp.ErrUnsupportedSchema, CodeUnsupportedSchema},
	{warp.ErrNotFound, CodeNotFound},
	{warp.ErrNoOpenTicket, CodeNoOpenTicket},
	{warp.ErrConflict, CodeConflict},
	{warp.ErrStaleEpoch, CodeStaleEpoch},
	{warp.ErrNotHolder, CodeNotHolder},
	{warp.ErrTooManyHosts, CodeTooManyHosts},
	{warp.ErrLeaseEnded, CodeLeaseEnded},
	{warp.ErrAdoptionIncomplete, CodeAdoptionIncomplete},
	{warp.ErrUnavailable, CodeUnavailable},
	{ErrUnauthorized, CodeUnauthorized},
	{ErrForbidden, CodeForbidden},
	{ErrBodyTooLarge, CodeBodyTooLarge},
	{ErrMethodNotAllowed, CodeMethodNotAllowed},
}

// ErrorStatus returns the wire code and HTTP status for err: the row of the
// first error err matches, else internal / 500.
func ErrorStatus(err error) (code string, status int) {
	for _, r := range errorTable {
		if errors.Is(err, r.kind) {
			return r.code, client.StatusOf(r.code)
		}
	}
	return CodeInternal, http.StatusInternalServerError
}

// Rows returns every code the table answers with, internal last, with
// their HTTP statuses, in order.
func Rows() (codes []string, statuses []int) {
	for _, r := range errorTable {
		codes, statuses = append(codes, r.code), append(statuses, client.StatusOf(r.code))
	}
	return append(codes, CodeInternal), append(statuses, http.StatusInternalServerError)
}
