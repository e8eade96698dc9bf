package warp_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// TestEventDataJSON pins each kind's JSON, the contract of DESIGN's
// "Events" table: the stores and the API write exactly these fields, and
// a renamed Go field must not rename them. Every kind this build writes
// has a row, so a new kind cannot skip its contract.
func TestEventDataJSON(t *testing.T) {
	at := time.Date(2026, 12, 7, 12, 0, 0, 500, time.UTC)
	title, labels := "Fix it", "go,ui"
	rows := []struct {
		data warp.EventData
		json string
	}{
		{warp.CreatedData{Title: "Fix it"}, `{"title":"Fix it"}`},
		{warp.ClaimedData{Agent: "a", Host: "h"}, `{"agent":"a","host":"h"}`},
		{warp.FirstV2HeartbeatData{Host: "h"}, `{"host":"h"}`},
		{warp.ExitReportData{Exit: warp.ExitParentExited, Host: "h"}, `{"exit":"parent-exited","host":"h"}`},
		{warp.LapsedData{Reason: warp.LapseNoActivity, FallbackExtended: true, Agent: "a", Host: "h", LastActivityAt: at},
			`{"reason":"no-activity","fallback_extended":true,"agent":"a","host":"h","last_activity_at":"2026-12-07T12:00:00.0000005Z","last_heartbeat_at":"0001-01-01T00:00:00Z"}`},
		{warp.ReleasedData{Reason: "r", Agent: "a", Host: "h"}, `{"reason":"r","agent":"a","host":"h"}`},
		{warp.ReleasedData{Reason: "r", Agent: "a", Host: "h", By: "jane"}, `{"reason":"r","agent":"a","host":"h","by":"jane"}`},
		{warp.CompletedData{PRURL: "https://x/pr/1", Agent: "a", Host: "h"}, `{"pr_url":"https://x/pr/1","agent":"a","host":"h"}`},
		{warp.VerdictChangedData{From: warp.VerdictActive, To: warp.VerdictStalled, Since: at, Agent: "a", Host: "h"},
			`{"from":"active","to":"stalled","since":"2026-12-07T12:00:00.0000005Z","agent":"a","host":"h"}`},
		{warp.ModeChangedData{From: warp.ModeLegacy, To: warp.ModeActivity, Forced: true}, `{"from":"legacy","to":"activity","forced":true}`},
		{warp.EditedData{Title: &title, By: "jane"}, `{"title":"Fix it","by":"jane"}`},
		{warp.EditedData{Labels: &labels}, `{"labels":"go,ui"}`},
		{warp.ReopenedData{From: warp.TicketCompleted, Reason: "r"}, `{"from":"completed","reason":"r"}`},
		{warp.CancelledData{From: warp.TicketClaimed, Reason: "r", By: "jane"}, `{"from":"claimed","reason":"r","by":"jane"}`},
		{warp.BlockedData{Attempts: 3, MaxAttempts: 3, Reason: "#1 lapsed"}, `{"attempts":3,"max_attempts":3,"reason":"#1 lapsed"}`},
		{warp.SnapshotData{State: "saved", Commit: "abc", Host: "h"}, `{"state":"saved","commit":"abc","host":"h"}`},
		{warp.SnapshotData{State: "clean", Host: "h"}, `{"state":"clean","host":"h"}`},
		{warp.HostAlarmData{Host: "h", Leases: 3, Stale: 2, Message: "m"}, `{"host":"h","leases":3,"stale":2,"message":"m"}`},
		{warp.HostAlarmClearedData{Host: "h", Leases: 3, Stale: 2, Reason: "activity-returned", Since: at},
			`{"host":"h","leases":3,"stale":2,"reason":"activity-returned","since":"2026-12-07T12:00:00.0000005Z"}`},
	}
	var covered []warp.EventKind
	for _, r := range rows {
		e := warp.NewEvent("T-1", 1, at, r.data)
		covered = append(covered, e.Kind)
		b, err := warp.EncodeEventData(e)
		if err != nil || string(b) != r.json {
			t.Errorf("%s: encoded %s, %v; want %s", e.Kind, b, err, r.json)
			continue
		}
		back, err := warp.DecodeEventData(e.Kind, b)
		if err != nil || !reflect.DeepEqual(back, r.data) {
			t.Errorf("%s: decoded %#v, %v; want %#v", e.Kind, back, err, r.data)
		}
		fields, err := warp.EventFields(e)
		var want map[string]any
		_ = json.Unmarshal([]byte(r.json), &want)
		if err != nil || !reflect.DeepEqual(fields, want) {
			t.Errorf("%s: wire fields %v, %v; want %v", e.Kind, fields, err, want)
		}
	}
	for _, k := range warp.EventKinds() {
		if !slices.Contains(covered, k) {
			t.Errorf("kind %s has no row here: pin its JSON (and DESIGN's Events table)", k)
		}
	}
}

func TestEventDataFromOlderAndNewerWarps(t *testing.T) {
	t.Run("a row written before the types keeps its meaning", func(t *testing.T) {
		// The map-based writers wrote every field, times as RFC 3339;
		// a lapse of a lease with no activity had the zero time.
		d, err := warp.DecodeEventData(warp.EventLapsed, []byte(`{"agent":"a","fallback_extended":false,"host":"h",
			"last_activity_at":"0001-01-01T00:00:00Z","last_heartbeat_at":"2026-12-07T12:00:00Z","reason":"expired"}`))
		want := warp.LapsedData{Reason: "expired", Agent: "a", Host: "h", LastHeartbeatAt: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)}
		if err != nil || d != want {
			t.Errorf("got %#v, %v; want %#v", d, err, want)
		}
	})
	t.Run("an empty detail is the zero value", func(t *testing.T) {
		for _, b := range []string{"", "{}"} {
			if d, err := warp.DecodeEventData(warp.EventClaimed, []byte(b)); err != nil || d != (warp.ClaimedData{}) {
				t.Errorf("%q: got %#v, %v", b, d, err)
			}
		}
	})
	t.Run("a kind this build does not know keeps its fields", func(t *testing.T) {
		raw := `{"n":2,"what":"new"}`
		d, err := warp.DecodeEventData("from-the-future", []byte(raw))
		if err != nil || d.EventKind() != "from-the-future" {
			t.Fatalf("got %#v, %v", d, err)
		}
		b, err := warp.EncodeEventData(warp.NewEvent("T-1", 1, time.Time{}, d))
		if err != nil || string(b) != raw {
			t.Errorf("written back as %s, %v; want %s", b, err, raw)
		}
	})
	t.Run("a corrupt detail is an error that names the kind", func(t *testing.T) {
		for _, kind := range []warp.EventKind{warp.EventLapsed, "from-the-future"} {
			_, err := warp.DecodeEventData(kind, []byte(`{"reason":`))
			if err == nil || !strings.Contains(err.Error(), string(kind)) {
				t.Errorf("%s: got %v, want an error naming the kind", kind, err)
			}
		}
		// A field of the wrong type is corrupt too, not silently zero.
		if _, err := warp.DecodeEventData(warp.EventBlocked, []byte(`{"attempts":"three"}`)); err == nil {
			t.Error("attempts as a string: decoded, want an error")
		}
	})
	t.Run("a detail of another kind is refused", func(t *testing.T) {
		e := warp.NewEvent("T-1", 1, time.Time{}, warp.ClaimedData{})
		e.Kind = warp.EventLapsed
		if _, err := warp.EncodeEventData(e); err == nil {
			t.Error("encoded a lapsed event with a claim's detail")
		}
		e.Data = nil
		if _, err := warp.EncodeEventData(e); err == nil {
			t.Error("encoded an event without a detail")
		}
	})
}
