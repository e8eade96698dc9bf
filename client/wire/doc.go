// Package wire is warp's wire format without a transport: the JSON types
// of the HTTP API, the error codes and the error value of each, and
// Decode, which turns an answer's status and body into a result or an
// *APIError. Package client re-exports all of it beside its net/http
// Client; this package exists so a process that must stay small (gyrum's
// heartbeat loop) can speak the API without linking net/http.
package wire
