package warpcli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/testsupport/storetest"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
	"github.com/gyrum-labs/warp/internal/warp"
	"github.com/gyrum-labs/warp/internal/warpcli"
	"github.com/gyrum-labs/warp/internal/warpcli/warpclitest"
)

const (
	agentToken = "agent-tok"
	adminToken = "admin-tok"
)

// syncBuffer collects a server's log from its goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// server is a warp server run in-process on 127.0.0.1:0 over a SQLite file
// in t.TempDir(), with its clock in the test's hands, the tokens agentToken
// and adminToken, and its log in a buffer.
type server struct {
	*warpclitest.Server
	clock *storetest.Clock
	log   *syncBuffer

	mu      sync.Mutex
	secrets map[string]string // lease secret of each ticket claimed with claim
}

func startServer(t *testing.T, edit func(*warpcli.ServeConfig)) *server {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("# test fleet\nagent:"+agentToken+"\nadmin:"+adminToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	s := warpclitest.Start(t, func(c *warpcli.ServeConfig) {
		c.TokenFile = tokens
		c.Logger = slogText(logs)
		if edit != nil {
			edit(c)
		}
	})
	return &server{Server: s, clock: s.Clock, log: logs}
}

// result is one command run.
type result struct {
	code           int
	stdout, stderr string
}

// run runs the warp command tree in-process against s with the admin
// token in the environment (WARP_URL, WARP_TOKEN), plus env.
func (s *server) run(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	full := map[string]string{"WARP_URL": s.URL(), "WARP_TOKEN": adminToken}
	for k, v := range env {
		full[k] = v
	}
	return runCLI(t, full, s.clock.Now, args...)
}

func runCLI(t *testing.T, env map[string]string, now func() time.Time, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	c := &warpcli.CLI{
		Stdout: &out, Stderr: &errb, Now: now,
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	}
	code := c.Run(context.Background(), args)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

func (r result) mustSucceed(t *testing.T) result {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	return r
}

func (r result) mustFail(t *testing.T, code int, stderrHas ...string) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d; stdout %q, stderr %q", r.code, code, r.stdout, r.stderr)
	}
	if !strings.HasPrefix(r.stderr, "warp: ") {
		t.Errorf("stderr %q does not start with \"warp: \"", r.stderr)
	}
	for _, s := range stderrHas {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("stderr %q does not mention %q", r.stderr, s)
		}
	}
	return r
}

func decode[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
	return v
}

func (s *server) claim(t *testing.T, id, host string) client.Ticket {
	t.Helper()
	cl := client.NewClient(s.URL(), agentToken)
	tk, err := cl.Claim(context.Background(), id, client.ClaimRequest{Agent: "O", Host: host})
	if err != nil {
		t.Fatalf("claim %s: %v", id, err)
	}
	s.mu.Lock()
	if s.secrets == nil {
		s.secrets = map[string]string{}
	}
	s.secrets[id] = tk.LeaseSecret
	s.mu.Unlock()
	return tk
}

func (s *server) heartbeat(t *testing.T, r client.HeartbeatRequest) {
	t.Helper()
	s.mu.Lock()
	secret := s.secrets[r.Ticket]
	s.mu.Unlock()
	cl := client.NewClient(s.URL(), agentToken).WithLeaseSecret(secret)
	if _, err := cl.Heartbeat(context.Background(), r); err != nil {
		t.Fatalf("heartbeat %+v: %v", r, err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestTicketCreateListShow(t *testing.T) {
	s := startServer(t, nil)
	r := s.run(t, nil, "ticket", "create", "T-1", "--title", "fix the flaky test", "--label", "backend", "--label", "db").mustSucceed(t)
	if r.stdout != "created T-1 (labels backend, db)\n" {
		t.Errorf("create printed %q", r.stdout)
	}
	r = s.run(t, nil, "ticket", "create", "--title", "generated id", "--json").mustSucceed(t)
	gen := decode[client.Ticket](t, r.stdout)
	if !warp.ValidTicketID(gen.ID) || gen.State != "open" || gen.Title != "generated id" {
		t.Errorf("created %+v", gen)
	}
	s.run(t, nil, "ticket", "create", "T-3").mustSucceed(t)
	s.claim(t, "T-1", "build-1")
	s.clock.Advance(3*time.Minute + 12*time.Second)

	r = s.run(t, nil, "ticket", "list").mustSucceed(t)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[0], "VERDICT") {
		t.Fatalf("list:\n%s", r.stdout)
	}
	if !strings.Contains(lines[1], "T-1") || !strings.Contains(lines[1], "claimed") || !strings.Contains(lines[1], "build-1") ||
		!strings.Contains(lines[1], "3m12s ago") || !strings.Contains(lines[1], "active") {
		t.Errorf("claimed row %q: want T-1 claimed build-1 active 3m12s ago", lines[1])
	}
	r = s.run(t, nil, "ticket", "list", "--state", "claimed", "--json").mustSucceed(t)
	list := decode[client.TicketList](t, r.stdout)
	if len(list.Tickets) != 1 || list.Tickets[0].ID != "T-1" || list.Tickets[0].Lease.Host != "build-1" {
		t.Errorf("claimed list %+v", list)
	}
	r = s.run(t, nil, "ticket", "list", "--host", "nowhere", "--json").mustSucceed(t)
	if l := decode[client.TicketList](t, r.stdout); len(l.Tickets) != 0 || !strings.Contains(r.stdout, `"tickets": []`) {
		t.Errorf("empty list printed %q", r.stdout)
	}
	// Paging: one per page shows the hint; --all follows every page.
	r = s.run(t, nil, "ticket", "list", "--limit", "1").mustSucceed(t)
	if !strings.Contains(r.stderr, "--all") {
		t.Errorf("no more-pages hint: %q", r.stderr)
	}
	r = s.run(t, nil, "ticket", "list", "--limit", "1", "--all", "--json").mustSucceed(t)
	if l := decode[client.TicketList](t, r.stdout); len(l.Tickets) != 3 || l.NextCursor != "" {
		t.Errorf("--all listed %d tickets (cursor %q), want 3", len(l.Tickets), l.NextCursor)
	}

	r = s.run(t, nil, "ticket", "show", "T-1").mustSucceed(t)
	for _, want := range []string{"ticket", "T-1", "fix the flaky test", "backend, db", "epoch 1, held, agent O on host build-1", "verdict", "active", "events (2)", "created", "claimed", "host=build-1"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("show does not contain %q:\n%s", want, r.stdout)
		}
	}
	r = s.run(t, nil, "ticket", "show", "T-1", "--json").mustSucceed(t)
	d := decode[warpcli.TicketDetail](t, r.stdout)
	if d.Ticket.ID != "T-1" || len(d.Events) != 2 || d.Events[1].Kind != "claimed" {
		t.Errorf("show --json %+v", d)
	}

	// Mistakes.
	s.run(t, nil, "ticket", "create", "bad id!").mustFail(t, warpcli.ExitUsage, "invalid", "--help")
	s.run(t, nil, "ticket", "create", "T-1").mustFail(t, warpcli.ExitError, "already exists", "409")
	s.run(t, nil, "ticket", "show", "NOPE").mustFail(t, warpcli.ExitError, "not found", "warp ticket list")
	s.run(t, nil, "ticket", "show").mustFail(t, warpcli.ExitUsage)
	s.run(t, nil, "ticket", "list", "--state", "done").mustFail(t, warpcli.ExitUsage, "--state")
	s.run(t, nil, "ticket", "list", "--bogus").mustFail(t, warpcli.ExitUsage, "unknown flag")
}

func TestAuthErrorsSayWhatToDo(t *testing.T) {
	s := startServer(t, nil)
	s.run(t, map[string]string{"WARP_TOKEN": ""}, "ticket", "list").mustFail(t, warpcli.ExitError, "401", "WARP_TOKEN")
	s.run(t, map[string]string{"WARP_TOKEN": agentToken}, "ticket", "list").mustFail(t, warpcli.ExitError, "403", "admin token")
	// --token beats WARP_TOKEN.
	s.run(t, map[string]string{"WARP_TOKEN": agentToken}, "ticket", "list", "--token", adminToken).mustSucceed(t)
	// Nothing listening.
	runCLI(t, map[string]string{}, time.Now, "mode", "--url", "http://127.0.0.1:1").mustFail(t, warpcli.ExitError, "is warp running at http://127.0.0.1:1")
	// A password in the URL stays off the screen.
	if r := runCLI(t, map[string]string{"WARP_URL": "http://ops:s3cret@127.0.0.1:1"}, time.Now, "mode"); strings.Contains(r.stderr, "s3cret") || !strings.Contains(r.stderr, "is warp running at http://ops:xxxxx@127.0.0.1:1") {
		t.Errorf("stderr %q: want the hint with the password redacted", r.stderr)
	}
	runCLI(t, map[string]string{"WARP_URL": "ftp://x"}, time.Now, "mode").mustFail(t, warpcli.ExitUsage, "WARP_URL")
}

func TestReleaseCommand(t *testing.T) {
	s := startServer(t, nil)
	s.run(t, nil, "ticket", "create", "T-1").mustSucceed(t)
	s.claim(t, "T-1", "h1")
	r := s.run(t, nil, "release", "T-1", "--reason", "agent wedged").mustSucceed(t)
	if !strings.Contains(r.stdout, "released T-1 (epoch 1, agent O on host h1); it is open again") {
		t.Errorf("release printed %q", r.stdout)
	}
	r = s.run(t, nil, "ticket", "show", "T-1", "--json").mustSucceed(t)
	d := decode[warpcli.TicketDetail](t, r.stdout)
	if d.Ticket.State != "open" || d.Ticket.Lease.EndReason != "agent wedged" {
		t.Errorf("after release %+v", d.Ticket)
	}
	s.run(t, nil, "release", "T-1").mustFail(t, warpcli.ExitError, "410", "ended")
	s.claim(t, "T-1", "h2")
	s.run(t, nil, "release", "T-1", "--epoch", "1").mustFail(t, warpcli.ExitError, "409", "stale")
	r = s.run(t, nil, "release", "T-1", "--epoch", "2", "--json").mustSucceed(t)
	if tk := decode[client.Ticket](t, r.stdout); tk.State != "open" || tk.Lease.Epoch != 2 || tk.Lease.State != "released" {
		t.Errorf("release --json %+v", tk)
	}
	// show lists both attempts, newest first, each with how it ended.
	r = s.run(t, nil, "ticket", "show", "T-1").mustSucceed(t)
	i2, i1 := strings.Index(r.stdout, "#2 O on h2: released"), strings.Index(r.stdout, "#1 O on h1: released")
	if !strings.Contains(r.stdout, "attempts (2, newest first)") || i2 < 0 || i1 < i2 || !strings.Contains(r.stdout, "(agent wedged)") ||
		!strings.Contains(r.stdout, "snapshot none reported") {
		t.Errorf("show's attempts:\n%s", r.stdout)
	}
}

// TestStaleUnlock: four leases, idle or not by the server's own rule in
// transition mode. A: claimed, then nothing for 40m (stale). B: v2 with
// fresh activity (not stale). C: v1 heartbeat 1m ago (the v1 fallback
// counts the heartbeat: not stale). D: v2 heartbeats arrive but report
// 40m of idleness (stale even though it heartbeats).
func TestStaleUnlock(t *testing.T) {
	s := startServer(t, func(c *warpcli.ServeConfig) { c.Policy.LeaseWindow = 2 * time.Hour })
	for _, id := range []string{"A", "B", "C", "D"} {
		s.run(t, nil, "ticket", "create", id).mustSucceed(t)
		s.claim(t, id, "host-"+strings.ToLower(id))
	}
	s.clock.Advance(39 * time.Minute)
	s.heartbeat(t, client.HeartbeatRequest{Ticket: "C", Host: "host-c"})
	s.heartbeat(t, client.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: "D", Epoch: 1, Host: "host-d", ActivityAgeS: ptr(39 * 60.0)})
	s.clock.Advance(time.Minute)
	s.heartbeat(t, client.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: "B", Epoch: 1, Host: "host-b", ActivityAgeS: ptr(5.0)})

	r := s.run(t, nil, "stale-unlock", "--dry-run").mustSucceed(t)
	want := "would release A epoch 1 (agent O on host host-a): idle 40m00s by last_activity_at\n" +
		"would release D epoch 1 (agent O on host host-d): idle 40m00s by last_activity_at\n" +
		"2 of 4 claimed ticket(s) idle for longer than 30m00s (mode transition); dry run, nothing released\n"
	if r.stdout != want {
		t.Errorf("dry run printed\n%s\nwant\n%s", r.stdout, want)
	}
	r = s.run(t, nil, "stale-unlock", "--dry-run", "--json").mustSucceed(t)
	rep := decode[warpcli.StaleUnlockReport](t, r.stdout)
	if !rep.DryRun || rep.Claimed != 4 || len(rep.Stale) != 2 || rep.Stale[0].Ticket != "A" || rep.Stale[1].Ticket != "D" ||
		rep.Stale[1].Action != "would-release" || rep.Stale[1].IdleS != 2400 {
		t.Errorf("dry run report %+v", rep)
	}
	for _, id := range []string{"A", "B", "C", "D"} {
		if v, _ := s.Service.Ticket(context.Background(), id); v.Ticket.State != warp.TicketClaimed {
			t.Fatalf("dry run changed %s to %s", id, v.Ticket.State)
		}
	}
	// A longer threshold spares both.
	r = s.run(t, nil, "stale-unlock", "--older-than", "45m", "--dry-run").mustSucceed(t)
	if !strings.HasPrefix(r.stdout, "0 of 4") {
		t.Errorf("45m dry run printed %q", r.stdout)
	}

	r = s.run(t, nil, "stale-unlock").mustSucceed(t)
	if !strings.Contains(r.stdout, "released A epoch 1") || !strings.Contains(r.stdout, "released D epoch 1") || !strings.Contains(r.stdout, "released 2\n") {
		t.Errorf("stale-unlock printed %q", r.stdout)
	}
	for id, want := range map[string]warp.TicketState{"A": warp.TicketOpen, "B": warp.TicketClaimed, "C": warp.TicketClaimed, "D": warp.TicketOpen} {
		v, err := s.Service.Ticket(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if v.Ticket.State != want {
			t.Errorf("%s is %s, want %s", id, v.Ticket.State, want)
		}
		if want == warp.TicketOpen && !strings.HasPrefix(v.Lease.EndReason, "stale-unlock: no progress for 40m00s") {
			t.Errorf("%s release reason %q", id, v.Lease.EndReason)
		}
	}
	r = s.run(t, nil, "stale-unlock", "--json").mustSucceed(t)
	if rep := decode[warpcli.StaleUnlockReport](t, r.stdout); rep.Claimed != 2 || len(rep.Stale) != 0 {
		t.Errorf("second pass %+v", rep)
	}
	s.run(t, nil, "stale-unlock", "--older-than", "0s").mustFail(t, warpcli.ExitUsage, "--older-than")
}

func TestAdoptionAndMode(t *testing.T) {
	s := startServer(t, nil)
	for _, id := range []string{"T-1", "T-2"} {
		s.run(t, nil, "ticket", "create", id).mustSucceed(t)
	}
	s.claim(t, "T-1", "old-host")
	s.claim(t, "T-2", "new-host")
	s.heartbeat(t, client.HeartbeatRequest{Ticket: "T-1", Host: "old-host"})
	s.heartbeat(t, client.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: "T-2", Epoch: 1, Host: "new-host", ActivityAgeS: ptr(1.0)})
	s.clock.Advance(90 * time.Second)

	r := s.run(t, nil, "adoption").mustSucceed(t)
	for _, want := range []string{"HOST", "new-host", "old-host", "1m30s ago", "2 host(s), 1 on v2 only; ready for activity mode: no, v1 from old-host"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("adoption does not contain %q:\n%s", want, r.stdout)
		}
	}
	r = s.run(t, nil, "adoption", "--window", "1h", "--json").mustSucceed(t)
	a := decode[client.Adoption](t, r.stdout)
	if a.Window != "1h0m0s" || a.Summary.Hosts != 2 || a.Summary.V2Hosts != 1 || a.Summary.ReadyForActivityMode {
		t.Errorf("adoption --json %+v", a)
	}

	if r := s.run(t, nil, "mode").mustSucceed(t); r.stdout != "transition\n" {
		t.Errorf("mode printed %q", r.stdout)
	}
	s.run(t, nil, "mode", "set", "activity").mustFail(t, warpcli.ExitError, "old-host", "adoption_incomplete", "--force")
	if r := s.run(t, nil, "mode", "--json").mustSucceed(t); decode[client.ModeBody](t, r.stdout).Mode != "transition" {
		t.Errorf("the refused switch changed the mode: %s", r.stdout)
	}
	if r := s.run(t, nil, "mode", "set", "activity", "--force").mustSucceed(t); r.stdout != "mode: activity\n" {
		t.Errorf("mode set printed %q", r.stdout)
	}
	if r := s.run(t, nil, "mode", "set", "legacy", "--json").mustSucceed(t); decode[client.ModeBody](t, r.stdout).Mode != "legacy" {
		t.Errorf("mode set --json printed %q", r.stdout)
	}
	s.run(t, nil, "mode", "set", "yolo").mustFail(t, warpcli.ExitUsage, "yolo")
	s.run(t, nil, "mode", "yolo").mustFail(t, warpcli.ExitUsage)
}

func TestEveryCommandHasHelpWithAnExample(t *testing.T) {
	for _, args := range [][]string{
		{}, {"serve"}, {"ticket"}, {"ticket", "create"}, {"ticket", "list"}, {"ticket", "show"},
		{"release"}, {"stale-unlock"}, {"adoption"}, {"mode"}, {"mode", "set"},
	} {
		r := runCLI(t, map[string]string{}, time.Now, append(args, "--help")...)
		if r.code != 0 || !strings.Contains(r.stdout, "Examples:") || !strings.Contains(r.stdout, "Usage:") {
			t.Errorf("warp %s --help: exit %d, output %q", strings.Join(args, " "), r.code, r.stdout)
		}
	}
	runCLI(t, map[string]string{}, time.Now, "frobnicate").mustFail(t, warpcli.ExitUsage, "unknown command")
}

func TestReleaseOnExitEndsTheLeaseAtOnce(t *testing.T) {
	s := startServer(t, func(c *warpcli.ServeConfig) { c.ReleaseOnExit = true })
	s.run(t, nil, "ticket", "create", "T-1").mustSucceed(t)
	s.claim(t, "T-1", "h1")
	s.heartbeat(t, client.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: "T-1", Epoch: 1, ActivityAgeS: ptr(3.0), Exit: "parent-exited"})
	r := s.run(t, nil, "ticket", "show", "T-1", "--json").mustSucceed(t)
	d := decode[warpcli.TicketDetail](t, r.stdout)
	if d.Ticket.State != "open" || d.Ticket.Lease.State != "released" || d.Ticket.Lease.EndReason != warp.ReleaseExitReport {
		t.Fatalf("after an exit report with --release-on-exit: ticket %s lease %+v", d.Ticket.State, d.Ticket.Lease)
	}
}

// Agent-supplied text reaches an operator's terminal inert: ESC, OSC 52
// (clipboard), BEL, newlines and bidi overrides in an agent label, a host,
// a title or in_flight are printed escaped by the human commands; --json
// keeps the exact text.
func TestHumanOutputEscapesControlCharacters(t *testing.T) {
	s := startServer(t, nil)
	const osc52 = "\x1b]52;c;ZXZpbA==\x07"
	evil := "h" + osc52 + "\x1b[2J\nX\u202e"
	s.run(t, nil, "ticket", "create", "T-1", "--title", "title "+osc52).mustSucceed(t)
	cl := client.NewClient(s.URL(), agentToken)
	tk, err := cl.Claim(context.Background(), "T-1", client.ClaimRequest{Agent: "agent" + osc52, Host: evil})
	if err != nil {
		t.Fatal(err)
	}
	s.secrets = map[string]string{"T-1": tk.LeaseSecret}
	s.heartbeat(t, client.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: "T-1", Epoch: 1, Host: evil, ActivityAgeS: ptr(1.0), InFlight: "Bash" + osc52})
	for _, args := range [][]string{{"ticket", "list"}, {"ticket", "show", "T-1"}, {"hosts"}, {"adoption"}} {
		r := s.run(t, nil, args...).mustSucceed(t)
		for _, bad := range []string{"\x1b", "\x07", "\u202e"} {
			if strings.Contains(r.stdout, bad) {
				t.Errorf("warp %s prints %q raw:\n%q", strings.Join(args, " "), bad, r.stdout)
			}
		}
		if !strings.Contains(r.stdout, `\x1b]52;c;ZXZpbA==\x07`) {
			t.Errorf("warp %s does not show the escaped sequence:\n%s", strings.Join(args, " "), r.stdout)
		}
	}
	r := s.run(t, nil, "ticket", "list", "--json").mustSucceed(t)
	got := decode[client.TicketList](t, r.stdout)
	if len(got.Tickets) != 1 || got.Tickets[0].Lease == nil || got.Tickets[0].Lease.Host != evil || got.Tickets[0].Lease.InFlight != "Bash"+osc52 {
		t.Errorf("--json changed the text: %+v", got)
	}
}

// stale-unlock judges idleness by the server's clock, not this host's, and
// releases only what is still idle when the release reaches the server.
func TestStaleUnlockUsesTheServersView(t *testing.T) {
	s := startServer(t, func(c *warpcli.ServeConfig) { c.Policy.LeaseWindow = 2 * time.Hour })
	for _, id := range []string{"A", "B"} {
		s.run(t, nil, "ticket", "create", id).mustSucceed(t)
		s.claim(t, id, "host-"+strings.ToLower(id))
	}
	s.clock.Advance(40 * time.Minute) // the server's clock; this host's stays in 2026-12 or wherever it is
	r := s.run(t, nil, "stale-unlock", "--dry-run", "--json").mustSucceed(t)
	if rep := decode[warpcli.StaleUnlockReport](t, r.stdout); len(rep.Stale) != 2 || rep.Stale[0].IdleS != 2400 {
		t.Fatalf("dry run by the server's clock: %+v, want A and B idle 40 min", rep)
	}
	// B shows progress between a listing and its release: the server
	// refuses the conditional release, A's goes through.
	s.heartbeat(t, client.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: "B", Epoch: 1, Host: "host-b", ActivityAgeS: ptr(0.0)})
	c := client.NewClient(s.URL(), adminToken)
	ctx := context.Background()
	if _, err := c.Release(ctx, "B", client.ReleaseRequest{Epoch: 1, IdleForS: 1800}); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("conditional release of B after its activity: %v, want conflict", err)
	}
	if _, err := c.Release(ctx, "A", client.ReleaseRequest{Epoch: 1, IdleForS: 1800}); err != nil {
		t.Fatalf("conditional release of idle A: %v", err)
	}
	if v, _ := s.Service.Ticket(ctx, "B"); v.Ticket.State != warp.TicketClaimed {
		t.Fatalf("B is %s, want still claimed", v.Ticket.State)
	}
	if _, err := c.Release(ctx, "B", client.ReleaseRequest{Epoch: 1, IdleForS: -1}); !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("negative idle_for_s: %v, want invalid", err)
	}
}

// The operator CLI retries a request warp refuses for now (429, 503), at
// most three times, saying so on stderr; a refusal that lasts is the error.
func TestOperatorCommandsRetryRefusals(t *testing.T) {
	s := startServer(t, nil)
	front := warptest.StartRefusing(t, s.URL())
	env := map[string]string{"WARP_URL": front.URL()}
	front.Refuse(http.StatusServiceUnavailable, 3)
	r := s.run(t, env, "ticket", "create", "T-r").mustSucceed(t)
	if front.Refused() != 3 || strings.Count(r.stderr, "warp: the server refused for now") != 3 {
		t.Fatalf("create through three 503s: refused %d, stderr %q", front.Refused(), r.stderr)
	}
	front.Refuse(http.StatusTooManyRequests, 4)
	s.run(t, env, "ticket", "show", "T-r").mustFail(t, 1, "too_many_connections")
	if front.Refused() != 7 {
		t.Fatalf("show through four 429s: %d requests refused, want 4 (one try and three retries)", front.Refused()-3)
	}
}
