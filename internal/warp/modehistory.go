package warp

import (
	"context"
	"slices"
	"time"
)

// ModeChange is one switch of the expiry mode, as SetMode recorded it in
// the global event mode-changed.
type ModeChange struct {
	EventID int64
	At      time.Time
	From    Mode
	To      Mode
	// Forced: the switch to activity was made with force, past a host that
	// still sent v1 heartbeats.
	Forced bool
}

// ModeHistory returns the latest limit mode changes, oldest first
// (MaxListLimit when limit is not in 1..MaxListLimit). It reads the
// mode-changed events (by kind, newest first, then reversed), so its cost
// does not grow with the other events.
func (s *Service) ModeHistory(ctx context.Context, limit int) ([]ModeChange, error) {
	if limit <= 0 || limit > MaxListLimit {
		limit = MaxListLimit
	}
	var evs []Event
	err := s.store.View(ctx, func(tx Tx) error {
		var err error
		evs, err = tx.RecentEvents(ctx, []EventKind{EventModeChanged}, limit)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]ModeChange, 0, len(evs))
	for _, e := range evs {
		d, _ := e.Data.(ModeChangedData)
		out = append(out, ModeChange{EventID: e.ID, At: e.At, From: d.From, To: d.To, Forced: d.Forced})
	}
	slices.Reverse(out)
	return out, nil
}
