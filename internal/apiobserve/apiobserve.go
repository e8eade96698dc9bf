// Package apiobserve holds what the HTTP API server (internal/httpapi) tells
// its observers after a request: how a heartbeat ended and which write
// succeeded. The server calls the observers of its configuration with them;
// warp serve (internal/warpcli) hands them to the dashboard's event stream
// and to the metrics, so neither depends on the server.
package apiobserve

import "github.com/gyrum-labs/warp/internal/warp"

// HeartbeatOutcome describes how one heartbeat request ended.
type HeartbeatOutcome struct {
	// SchemaVersion of the body; 0 when it could not be decoded.
	SchemaVersion int
	// Exit is the exit report reason, empty for a plain heartbeat.
	Exit string
	// Code is "ok" or the wire error code of the answer (lease_ended, ...;
	// see internal/httpkit).
	Code string
	// Extended is false when the heartbeat did not extend the lease (a v1
	// heartbeat in activity mode) or failed.
	Extended bool
	// Ticket is the heartbeat's ticket (empty when the body was not
	// decoded); Epoch the lease it applied to, 0 when it failed.
	Ticket string
	Epoch  int64
}

// Change describes one successful write other than a heartbeat (for the
// dashboard's event stream).
type Change struct {
	// Kind is the event kind the write recorded: created, claimed,
	// released, completed, edited, cancelled, reopened or mode-changed.
	Kind   warp.EventKind
	Ticket string // empty for mode changes
	Epoch  int64
	Reason string // a release's, cancel's or reopen's reason
	Mode   string // the mode after a mode change
}
