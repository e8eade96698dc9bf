package gyrumdir

import (
	"encoding/json"
	"fmt"
	"time"
)

// LoopState is heartbeat.state: what the loop did last, for `gyrum status`
// and `gyrum heartbeat status`. The loop rewrites it (atomically) after
// every tick; it is informative only — nothing decides on it.
type LoopState struct {
	PID           int       `json:"pid"`
	StartTime     uint64    `json:"start_time"`
	SchemaVersion int       `json:"schema_version"` // what the loop sends now: 2, or 1 after a fallback or when run as v1
	StartedAt     time.Time `json:"started_at"`
	UpdatedAt     time.Time `json:"updated_at"`
	// LastPOSTAt is when the loop last sent a heartbeat (whatever the answer).
	LastPOSTAt time.Time `json:"last_post_at,omitzero"`
	// LastOutcome of the latest tick: "started", "ok", "stale-report",
	// "corrupt-lease", "skipped-stale" (v1 fallback only), "error",
	// "lease-ended", "stale-epoch", "not-found", or the exit ("exit:
	// parent-exited", "exit: lease-ended", ...).
	LastOutcome  string    `json:"last_outcome"`
	LastStatus   int       `json:"last_status,omitempty"` // HTTP status of the latest POST, 0 for a network error
	LastError    string    `json:"last_error,omitempty"`
	ActivityAgeS float64   `json:"activity_age_s"`
	InFlight     string    `json:"in_flight,omitempty"`
	ExpiresAt    time.Time `json:"expires_at,omitzero"` // from the latest 200
	Verdict      string    `json:"verdict,omitempty"`   // from the latest 200
	// HookSeen reports whether the agent's hook has fired since the loop
	// started; HookEvents counts its runs since then.
	HookSeen   bool      `json:"hook_seen"`
	HookEvents int64     `json:"hook_events"`
	Posts      int64     `json:"posts"`
	Skips      int64     `json:"skips"`
	Failures   int64     `json:"failures"`
	NextTickAt time.Time `json:"next_tick_at,omitzero"`
	// NoteSentAt is the time (Note.At) of the last note warp acknowledged:
	// a note.json with another time is sent with the next heartbeat.
	NoteSentAt time.Time `json:"note_sent_at,omitzero"`
	// ProgressAgeS is the time since the work last progressed (issue 44).
	ProgressAgeS float64 `json:"progress_age_s,omitempty"`
}

// WriteState writes heartbeat.state atomically (a reader sees the old
// content or the new one) but not durably (no fsync): it is rewritten every
// tick and only informs.
func (d Dir) WriteState(s LoopState) error {
	data, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	return writeFile(d.file(StateFile), append(data, '\n'), false)
}

// ReadState reads heartbeat.state. Missing wraps fs.ErrNotExist, unusable
// content wraps ErrCorrupt.
func (d Dir) ReadState() (LoopState, error) {
	p := d.file(StateFile)
	data, err := readSmall(p, maxSmallFile)
	if err != nil {
		return LoopState{}, err
	}
	var s LoopState
	if err := json.Unmarshal(data, &s); err != nil {
		return LoopState{}, fmt.Errorf("%w: %s: %v", ErrCorrupt, p, err)
	}
	return s, nil
}
