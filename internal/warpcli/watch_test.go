package warpcli_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/warpcli"
	"github.com/gyrum-labs/warp/internal/warpcli/watch"
)

// watching is a `warp ticket list --watch` running in-process.
type watching struct {
	cancel    context.CancelFunc
	out, errb *syncBuffer
	done      chan int
	code      *int
}

// watch starts `warp ticket list --watch ARGS` against s with the admin
// token (env overrides), reconnecting after 20 ms × the attempt instead of
// the server's 2 s. Its stdout is out (not a terminal). It is stopped at
// the end of the test.
func (s *server) watch(t *testing.T, env map[string]string, args ...string) *watching {
	t.Helper()
	full := map[string]string{"WARP_URL": s.URL(), "WARP_TOKEN": adminToken}
	for k, v := range env {
		full[k] = v
	}
	return startWatch(t, full, s.clock.Now, nil, args...)
}

// startWatch starts `warp ticket list --watch ARGS` with env, writing to
// stdout, or to the watching's out when nil.
func startWatch(t *testing.T, env map[string]string, now func() time.Time, stdout io.Writer, args ...string) *watching {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &watching{cancel: cancel, out: &syncBuffer{}, errb: &syncBuffer{}, done: make(chan int, 1)}
	if stdout == nil {
		stdout = w.out
	}
	c := &warpcli.CLI{Stdout: stdout, Stderr: w.errb, Now: now,
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Backoff: func(attempt int, _ time.Duration) time.Duration {
			return time.Duration(attempt) * 20 * time.Millisecond
		}}
	go func() { w.done <- c.Run(ctx, append([]string{"ticket", "list", "--watch"}, args...)) }()
	t.Cleanup(func() { cancel(); w.exit(t) })
	return w
}

// exit waits up to 10 s for the command to end and returns its code.
func (w *watching) exit(t *testing.T) int {
	t.Helper()
	if w.code != nil {
		return *w.code
	}
	select {
	case code := <-w.done:
		w.code = &code
		return code
	case <-time.After(10 * time.Second):
		t.Fatalf("the watch did not end within 10 s; stdout:\n%s\nstderr:\n%s", w.out.String(), w.errb.String())
	}
	return 0
}

// stop cancels the command's context, as a signal does, and checks that
// it ended with 0.
func (w *watching) stop(t *testing.T) {
	t.Helper()
	w.cancel()
	if code := w.exit(t); code != 0 {
		t.Fatalf("the watch ended with %d after its context was cancelled, want 0; stderr:\n%s", code, w.errb.String())
	}
}

// until polls what the watch printed every 10 ms until ok holds, for up
// to 10 s.
func (w *watching) until(t *testing.T, what string, ok func(stdout string) bool) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out := w.out.String()
		if ok(out) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; stdout:\n%s\nstderr:\n%s", what, out, w.errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// jsonLine is one line of --watch -o json.
type jsonLine struct {
	snap *watch.Snapshot
	upd  *watch.Update
}

func jsonLines(t *testing.T, out string) []jsonLine {
	t.Helper()
	var lines []jsonLine
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(l), &head); err != nil {
			t.Fatalf("line %q is not JSON: %v", l, err)
		}
		switch head.Type {
		case "snapshot":
			lines = append(lines, jsonLine{snap: ptr(decode[watch.Snapshot](t, l))})
		case "update":
			lines = append(lines, jsonLine{upd: ptr(decode[watch.Update](t, l))})
		default:
			t.Fatalf("line %q has type %q", l, head.Type)
		}
	}
	return lines
}

// updates returns the update lines about ticket id ("" for all).
func updates(lines []jsonLine, id string) []watch.Update {
	var out []watch.Update
	for _, l := range lines {
		if l.upd != nil && (id == "" || l.upd.ID == id) {
			out = append(out, *l.upd)
		}
	}
	return out
}

func snapshots(lines []jsonLine) []watch.Snapshot {
	var out []watch.Snapshot
	for _, l := range lines {
		if l.snap != nil {
			out = append(out, *l.snap)
		}
	}
	return out
}

// hasUpdate returns a condition: an update of kind about id was printed.
func hasUpdate(t *testing.T, kind, id string) func(string) bool {
	return func(out string) bool {
		for _, u := range updates(jsonLines(t, out), id) {
			if u.Kind == kind {
				return true
			}
		}
		return false
	}
}

func hasSnapshots(t *testing.T, n int) func(string) bool {
	return func(out string) bool { return len(snapshots(jsonLines(t, out))) >= n }
}

func ms(t time.Time) int64 { return t.UnixMilli() }

// -o json: the list as one snapshot line, then one line per change of the
// list, with the ticket as the server sent it and whether it is in the
// list. A filtered list leaves out the changes of tickets outside it and
// says when one leaves it.
func TestTicketListWatchJSON(t *testing.T) {
	s := startServer(t, nil)
	t0 := s.clock.Now()
	s.run(t, nil, "ticket", "create", "T-0", "--title", "already claimed").mustSucceed(t)
	s.claim(t, "T-0", "h0")

	all := s.watch(t, nil, "-o", "json")
	claimed := s.watch(t, nil, "--state", "claimed", "--json")
	for _, w := range []*watching{all, claimed} {
		out := w.until(t, "the first snapshot", hasSnapshots(t, 1))
		snap := snapshots(jsonLines(t, out))[0]
		want := client.StreamTicket{ID: "T-0", Title: "already claimed", State: "claimed", Epoch: 1, Verdict: "active",
			Agent: "O", Host: "h0", HeartbeatAt: ms(t0), ActivityAt: ms(t0), ExpiresAt: ms(t0.Add(30 * time.Minute))}
		if snap.Reason != watch.Start || len(snap.Tickets) != 1 || snap.Tickets[0] != want {
			t.Fatalf("first line %+v, want a snapshot (start) of %+v", snap, want)
		}
	}

	// One step at a time: a message carries the ticket as it is when the
	// server sends it, which may already show the next step.
	s.run(t, nil, "ticket", "create", "T-1", "--title", "fix it").mustSucceed(t)
	all.until(t, "T-1's creation", hasUpdate(t, client.StreamCreated, "T-1"))
	s.claim(t, "T-1", "h1")
	all.until(t, "T-1's claim", hasUpdate(t, client.StreamClaimed, "T-1"))
	claimed.until(t, "T-1's claim", hasUpdate(t, client.StreamClaimed, "T-1"))
	s.run(t, nil, "release", "T-1", "--reason", "agent wedged").mustSucceed(t)
	out := all.until(t, "T-1's release", hasUpdate(t, client.StreamReleased, "T-1"))
	got := updates(jsonLines(t, out), "T-1")
	if len(got) != 3 || got[0].Kind != "created" || got[1].Kind != "claimed" || got[2].Kind != "released" {
		t.Fatalf("updates of T-1: %+v, want created, claimed, released", got)
	}
	for _, u := range got {
		if u.Type != "update" || u.ID != "T-1" || u.Ticket == nil || u.InList == nil || !*u.InList || u.Now != ms(t0) {
			t.Errorf("update %+v (ticket %+v): want T-1 in the list, stamped with the server's clock", u, u.Ticket)
		}
	}
	if c := got[0].Ticket; c.State != "open" || c.Epoch != 0 || c.Title != "fix it" || c.Host != "" {
		t.Errorf("created row %+v", c)
	}
	if c := got[1].Ticket; c.State != "claimed" || c.Epoch != 1 || c.Verdict != "active" || c.Agent != "O" || c.Host != "h1" ||
		c.ExpiresAt != ms(t0.Add(30*time.Minute)) {
		t.Errorf("claimed row %+v", c)
	}
	if r := got[2]; r.Reason != "agent wedged" || r.Ticket.State != "open" || r.Ticket.Epoch != 1 || r.Ticket.Verdict != "" || r.Ticket.ExpiresAt != 0 {
		t.Errorf("released %+v, row %+v", r, r.Ticket)
	}

	out = claimed.until(t, "T-1's release", hasUpdate(t, client.StreamReleased, "T-1"))
	got = updates(jsonLines(t, out), "T-1")
	if len(got) != 2 || got[0].Kind != "claimed" || !*got[0].InList || got[1].Kind != "released" || *got[1].InList {
		t.Errorf("--state claimed: updates of T-1 %+v; want claimed (in the list) and released (out of it), not the creation", got)
	}

	// A v2 heartbeat, then a mode change: the list is read again, and its
	// row of T-0 is the one the stream sent but for the expiry, which the
	// mode moved (legacy: the last extending heartbeat + the window).
	s.clock.Advance(2 * time.Minute)
	s.heartbeat(t, client.NewHeartbeat("T-0", 1, 30*time.Second))
	out = all.until(t, "T-0's heartbeat", hasUpdate(t, client.StreamHeartbeat, "T-0"))
	hb := updates(jsonLines(t, out), "T-0")[0]
	if r := hb.Ticket; r.SchemaVersion != 2 || r.HeartbeatAt != ms(s.clock.Now()) || r.ActivityAt != ms(s.clock.Now().Add(-30*time.Second)) {
		t.Errorf("heartbeat row %+v", r)
	}
	s.run(t, nil, "mode", "set", "legacy").mustSucceed(t)
	out = all.until(t, "the snapshot after the mode change", hasSnapshots(t, 2))
	lines := jsonLines(t, out)
	if m := updates(lines, "")[len(updates(lines, ""))-1]; m.Kind != client.StreamModeChanged || m.To != "legacy" || m.InList != nil {
		t.Errorf("last update %+v, want the mode change to legacy", m)
	}
	snap := snapshots(lines)[1]
	if snap.Reason != watch.ModeChanged || len(snap.Tickets) != 2 {
		t.Fatalf("snapshot %+v, want T-0 and T-1 read again after the mode change", snap)
	}
	want := *hb.Ticket
	want.ExpiresAt = ms(s.clock.Now().Add(30 * time.Minute))
	if snap.Tickets[0] != want {
		t.Errorf("T-0 read again: %+v\nthe stream's row, legacy expiry: %+v", snap.Tickets[0], want)
	}

	all.stop(t)
	claimed.stop(t)
	if all.errb.String() != "" || claimed.errb.String() != "" {
		t.Errorf("stderr: %q, %q", all.errb.String(), claimed.errb.String())
	}
}

// Into a pipe or a file: the table as `ticket list` prints it, then one
// line per change; a heartbeat that moves only times is left out.
func TestTicketListWatchLines(t *testing.T) {
	s := startServer(t, nil)
	s.run(t, nil, "ticket", "create", "T-0", "--title", "already claimed").mustSucceed(t)
	s.claim(t, "T-0", "h0")
	s.clock.Advance(3*time.Minute + 12*time.Second)
	list := s.run(t, nil, "ticket", "list").mustSucceed(t).stdout

	all := s.watch(t, nil)
	claimed := s.watch(t, nil, "--state", "claimed")
	for _, w := range []*watching{all, claimed} {
		if out := w.until(t, "the table", func(out string) bool { return strings.Contains(out, "T-0") }); out != list {
			t.Fatalf("the watch began with\n%s\nwant what ticket list prints:\n%s", out, list)
		}
	}
	// One step at a time, as in TestTicketListWatchJSON.
	printed := func(w *watching, s string) { w.until(t, s, func(out string) bool { return strings.Contains(out, s) }) }
	tA := s.clock.Now()
	s.run(t, nil, "ticket", "create", "T-1", "--title", "fix it").mustSucceed(t)
	printed(all, "created T-1")
	s.claim(t, "T-1", "h1")
	printed(all, "claimed T-1")
	printed(claimed, "claimed T-1")
	s.heartbeat(t, client.NewHeartbeat("T-0", 1, 0)) // schema claim → v2: a line
	printed(all, "heartbeat T-0")
	s.clock.Advance(2 * time.Second)                 // past the server's one-second fold of heartbeats
	s.heartbeat(t, client.NewHeartbeat("T-0", 1, 0)) // times only: no line
	s.run(t, nil, "release", "T-1", "--reason", "agent wedged").mustSucceed(t)

	out := all.until(t, "T-1's release", func(out string) bool { return strings.Contains(out, "released T-1") })
	changes := strings.Split(strings.TrimSuffix(strings.TrimPrefix(out, list), "\n"), "\n")
	want := []string{
		`created T-1 state=open epoch=0 title="fix it"`,
		`claimed T-1 state=claimed verdict=active epoch=1 agent=O host=h1`,
		`heartbeat T-0 state=claimed verdict=active epoch=1 agent=O host=h0`,
		`released T-1 state=open epoch=1 agent=O host=h1 reason="agent wedged"`,
	}
	if len(changes) != len(want) {
		t.Fatalf("changes:\n%s\nwant %d lines", strings.Join(changes, "\n"), len(want))
	}
	for i, w := range want {
		// Each line starts with the server's time of the change.
		at := tA
		if i == 3 {
			at = tA.Add(2 * time.Second)
		}
		if want := localStamp(at) + " " + w; changes[i] != want {
			t.Errorf("line %d: %q, want %q", i, changes[i], want)
		}
	}
	out = claimed.until(t, "T-1 leaving", func(out string) bool { return strings.Contains(out, "released T-1") })
	if !strings.Contains(out, "claimed T-1 state=claimed verdict=active epoch=1 agent=O host=h1 (joins the list)") ||
		!strings.Contains(out, `reason="agent wedged" (leaves the list)`) || strings.Contains(out, "created T-1") {
		t.Errorf("--state claimed printed:\n%s", out)
	}
	all.stop(t)
	claimed.stop(t)
}

// localStamp is how the lines print a time.
func localStamp(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") }

// When warp stops, the watch says so, reconnects once warp is back on the
// same address and reads the list again: changes made while it was away
// are in the new snapshot, and the stream runs again.
func TestTicketListWatchReconnects(t *testing.T) {
	s := startServer(t, nil)
	db, addr := s.Config.DB, strings.TrimPrefix(s.URL(), "http://")
	s.run(t, nil, "ticket", "create", "T-1").mustSucceed(t)
	w := s.watch(t, nil, "-o", "json")
	w.until(t, "the first snapshot", hasSnapshots(t, 1))

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if code := waitStderr(t, w, "warp: event stream lost"); code >= 0 {
		t.Fatalf("the watch ended (%d) when warp stopped", code)
	}
	// Another warp on the database, on another port, makes changes the
	// watch cannot see.
	other := startServer(t, func(c *warpcli.ServeConfig) { c.DB = db })
	other.run(t, nil, "ticket", "create", "T-2").mustSucceed(t)
	other.claim(t, "T-1", "h1")
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	back := startServer(t, func(c *warpcli.ServeConfig) { c.DB, c.Addr = db, addr })

	out := w.until(t, "the list read again", hasSnapshots(t, 2))
	snap := snapshots(jsonLines(t, out))[1]
	if snap.Reason != watch.Reconnected || len(snap.Tickets) != 2 || snap.Tickets[0].ID != "T-1" || snap.Tickets[0].State != "claimed" ||
		snap.Tickets[0].Host != "h1" || snap.Tickets[1].ID != "T-2" || snap.Tickets[1].State != "open" {
		t.Fatalf("after the reconnection: %+v, want T-1 claimed on h1 and T-2", snap)
	}
	waitStderr(t, w, "warp: reconnected; the list is read again (2 tickets)")
	back.run(t, nil, "ticket", "create", "T-3").mustSucceed(t)
	w.until(t, "T-3 through the new stream", hasUpdate(t, client.StreamCreated, "T-3"))
	w.stop(t)
}

// waitStderr waits up to 10 s for s on the watch's stderr; it returns
// the watch's exit code when it ended instead, else -1.
func waitStderr(t *testing.T, w *watching, s string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(w.errb.String(), s) {
		select {
		case code := <-w.done:
			w.code = &code
			return code
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("stderr has no %q within 10 s:\n%s", s, w.errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return -1
}

// A warp that comes back refusing the token ends the watch (exit 1) with
// what to do, rather than retrying for ever.
func TestTicketListWatchEndsWhenRefusedAfterReconnecting(t *testing.T) {
	s := startServer(t, nil)
	db, addr := s.Config.DB, strings.TrimPrefix(s.URL(), "http://")
	w := s.watch(t, nil, "-o", "json")
	w.until(t, "the first snapshot", hasSnapshots(t, 1))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("admin:another-admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	startServer(t, func(c *warpcli.ServeConfig) { c.DB, c.Addr, c.TokenFile = db, addr, tokens })
	if code := w.exit(t); code != warpcli.ExitError {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, w.errb.String())
	}
	if e := w.errb.String(); !strings.Contains(e, "401") || !strings.Contains(e, "WARP_TOKEN") {
		t.Errorf("stderr %q: want the 401 and what to do", e)
	}
}

// A server that refuses or cannot be reached at the start: exit 1 with
// the next step. --watch with paging flags: a usage error.
func TestTicketListWatchRefusals(t *testing.T) {
	s := startServer(t, nil)
	s.run(t, map[string]string{"WARP_TOKEN": ""}, "ticket", "list", "--watch").mustFail(t, warpcli.ExitError, "401", "WARP_TOKEN")
	s.run(t, map[string]string{"WARP_TOKEN": agentToken}, "ticket", "list", "--watch", "-o", "json").mustFail(t, warpcli.ExitError, "403", "admin token")
	if r := runCLI(t, map[string]string{}, time.Now, "ticket", "list", "--watch", "--url", "http://127.0.0.1:1").mustFail(t, warpcli.ExitError, "is warp running at http://127.0.0.1:1"); r.stdout != "" {
		t.Errorf("stdout %q", r.stdout)
	}
	s.run(t, nil, "ticket", "list", "--watch", "--limit", "5").mustFail(t, warpcli.ExitUsage, "--watch", "--limit")
	s.run(t, nil, "ticket", "list", "--watch", "--cursor", "c").mustFail(t, warpcli.ExitUsage, "--cursor")
	s.run(t, nil, "ticket", "list", "--watch", "--state", "done").mustFail(t, warpcli.ExitUsage, "--state")
	if r := s.run(t, nil, "ticket", "list", "--help").mustSucceed(t); !strings.Contains(r.stdout, "warp ticket list --state claimed --watch") {
		t.Errorf("--help has no --watch example:\n%s", r.stdout)
	}
}
