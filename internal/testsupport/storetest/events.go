package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

func testEvents(t *testing.T, open func(t *testing.T) warp.Store) {
	t.Run("HistoryInOrder", func(t *testing.T) {
		e := newEnv(t, open)
		e.create("T-1")
		e.create("T-2")
		e.claim("T-1", "h1")
		e.claim("T-2", "h1")
		e.clock.Advance(time.Minute)
		e.v2("T-1", 1, 0)
		if _, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, Exit: warp.ExitParentExited}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Release(e.ctx, "T-2", 1, "later"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Release(e.ctx, "T-1", 1, "restart"); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Minute)
		e.claim("T-1", "h2")
		if _, err := e.svc.Complete(e.ctx, "T-1", 2, "https://example.com/pr/7"); err != nil {
			t.Fatal(err)
		}
		evs := e.events("T-1")
		wantKinds := []warp.EventKind{warp.EventCreated, warp.EventClaimed, warp.EventFirstV2Heartbeat, warp.EventExitReport,
			warp.EventReleased, warp.EventClaimed, warp.EventCompleted}
		wantEpochs := []int64{0, 1, 1, 1, 1, 2, 2}
		var kinds []warp.EventKind
		var epochs []int64
		for i, ev := range evs {
			kinds = append(kinds, ev.Kind)
			epochs = append(epochs, ev.Epoch)
			if ev.Ticket != "T-1" {
				t.Errorf("event %d: ticket %q, want T-1", i, ev.Ticket)
			}
			if i > 0 && ev.ID <= evs[i-1].ID {
				t.Errorf("event ids not increasing: %d after %d", ev.ID, evs[i-1].ID)
			}
			if ev.At.Location() != time.UTC {
				t.Errorf("event %d time in %s, want UTC", i, ev.At.Location())
			}
		}
		if !slices.Equal(kinds, wantKinds) || !slices.Equal(epochs, wantEpochs) {
			t.Fatalf("history of T-1: got %v epochs %v, want %v epochs %v", kinds, epochs, wantKinds, wantEpochs)
		}
		wantTime(t, "created at", evs[0].At, T0())
		wantTime(t, "completed at", evs[6].At, T0().Add(2*time.Minute))
		if evs[4].Data.(warp.ReleasedData).Reason != "restart" || evs[5].Data.(warp.ClaimedData).Host != "h2" ||
			evs[6].Data.(warp.CompletedData).PRURL != "https://example.com/pr/7" || evs[3].Data.(warp.ExitReportData).Exit != warp.ExitParentExited {
			t.Errorf("event data: got %v / %v / %v / %v", evs[3].Data, evs[4].Data, evs[5].Data, evs[6].Data)
		}
		if k := e.kinds("T-2"); !slices.Equal(k, []warp.EventKind{warp.EventCreated, warp.EventClaimed, warp.EventReleased}) {
			t.Errorf("history of T-2: got %v", k)
		}

		// Paging by id.
		rest, err := e.svc.Events(e.ctx, "T-1", evs[2].ID, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(rest) != 2 || rest[0].ID != evs[3].ID || rest[1].ID != evs[4].ID {
			t.Errorf("events after %d, limit 2: got %v, want ids %d, %d", evs[2].ID, rest, evs[3].ID, evs[4].ID)
		}
		_, err = e.svc.Events(e.ctx, "T-missing", 0, 0)
		wantErr(t, "events of an unknown ticket", err, warp.ErrNotFound)
	})

	t.Run("RecentAndGlobal", func(t *testing.T) {
		e := newEnv(t, open)
		e.createClaim("T-1", "h1")
		e.createClaim("T-2", "h1")
		if _, err := e.svc.SetMode(e.ctx, warp.ModeLegacy, false); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Release(e.ctx, "T-1", 1, ""); err != nil {
			t.Fatal(err)
		}
		var recent, claims, newest2, repeated, global []warp.Event
		e.read(func(tx warp.Tx) error {
			var err error
			if recent, err = tx.RecentEvents(e.ctx, nil, 3); err != nil {
				return err
			}
			if claims, err = tx.RecentEvents(e.ctx, []warp.EventKind{warp.EventClaimed, warp.EventReleased}, 10); err != nil {
				return err
			}
			// The limit across kinds, and a kind named twice.
			if newest2, err = tx.RecentEvents(e.ctx, []warp.EventKind{warp.EventClaimed, warp.EventReleased}, 2); err != nil {
				return err
			}
			if repeated, err = tx.RecentEvents(e.ctx, []warp.EventKind{warp.EventClaimed, warp.EventClaimed}, 10); err != nil {
				return err
			}
			global, err = tx.Events(e.ctx, "", 0, 10)
			return err
		})
		var rk []warp.EventKind
		for _, ev := range recent {
			rk = append(rk, ev.Kind)
		}
		if want := []warp.EventKind{warp.EventReleased, warp.EventModeChanged, warp.EventClaimed}; !slices.Equal(rk, want) {
			t.Errorf("recent 3: got %v, want %v (newest first)", rk, want)
		}
		var ck []string
		for _, ev := range claims {
			ck = append(ck, string(ev.Kind)+":"+ev.Ticket)
		}
		if want := []string{"released:T-1", "claimed:T-2", "claimed:T-1"}; !slices.Equal(ck, want) {
			t.Errorf("recent claimed/released: got %v, want %v", ck, want)
		}
		kt := func(evs []warp.Event) []string {
			var out []string
			for _, ev := range evs {
				out = append(out, string(ev.Kind)+":"+ev.Ticket)
			}
			return out
		}
		if got, want := kt(newest2), []string{"released:T-1", "claimed:T-2"}; !slices.Equal(got, want) {
			t.Errorf("recent claimed/released, limit 2: got %v, want %v", got, want)
		}
		if got, want := kt(repeated), []string{"claimed:T-2", "claimed:T-1"}; !slices.Equal(got, want) {
			t.Errorf("recent claimed named twice: got %v, want %v", got, want)
		}
		if len(global) != 1 || global[0].Kind != warp.EventModeChanged || global[0].Ticket != "" {
			t.Errorf("global events: got %+v, want the one mode change", global)
		}
	})
}
