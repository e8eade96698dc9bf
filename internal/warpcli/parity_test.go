package warpcli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/warp"
	"github.com/gyrum-labs/warp/internal/warpcli"
)

func TestTicketCompleteCommand(t *testing.T) {
	s := startServer(t, nil)
	for _, id := range []string{"T-1", "T-2"} {
		s.run(t, nil, "ticket", "create", id).mustSucceed(t)
	}
	s.claim(t, "T-1", "h1")
	r := s.run(t, nil, "ticket", "complete", "T-1", "--pr", "https://example.com/pull/7").mustSucceed(t)
	if r.stdout != "completed T-1 (epoch 1, agent O on host h1); PR https://example.com/pull/7\n" {
		t.Errorf("complete printed %q", r.stdout)
	}
	d := decode[warpcli.TicketDetail](t, s.run(t, nil, "ticket", "show", "T-1", "--json").mustSucceed(t).stdout)
	if d.Ticket.State != "completed" || d.Ticket.Lease.State != "completed" || d.Ticket.Lease.PRURL != "https://example.com/pull/7" ||
		d.Events[len(d.Events)-1].Kind != "completed" {
		t.Errorf("after complete: ticket %+v, events %+v", d.Ticket, d.Events)
	}
	s.run(t, nil, "ticket", "complete", "T-1").mustFail(t, warpcli.ExitError, "410", "ended")

	// --epoch completes only that lease.
	s.claim(t, "T-2", "h1")
	s.run(t, nil, "release", "T-2").mustSucceed(t)
	s.claim(t, "T-2", "h2")
	s.run(t, nil, "ticket", "complete", "T-2", "--epoch", "1").mustFail(t, warpcli.ExitError, "409", "stale")
	if v, _ := s.Service.Ticket(context.Background(), "T-2"); v.Ticket.State != warp.TicketClaimed {
		t.Fatalf("a refused complete changed T-2 to %s", v.Ticket.State)
	}
	// An agent token may not complete a lease without its epoch.
	s.run(t, map[string]string{"WARP_TOKEN": agentToken}, "ticket", "complete", "T-2").mustFail(t, warpcli.ExitError, "403", "admin token")
	r = s.run(t, nil, "ticket", "complete", "T-2", "--epoch", "2", "-o", "json").mustSucceed(t)
	if tk := decode[client.Ticket](t, r.stdout); tk.State != "completed" || tk.Lease.Epoch != 2 || tk.Lease.Host != "h2" || tk.Lease.PRURL != "" {
		t.Errorf("complete -o json %+v", tk)
	}

	s.run(t, nil, "ticket", "complete", "bad id!").mustFail(t, warpcli.ExitUsage, "invalid")
	s.run(t, nil, "ticket", "complete", "T-2", "--epoch", "-1").mustFail(t, warpcli.ExitUsage, "--epoch")
	s.run(t, nil, "ticket", "complete").mustFail(t, warpcli.ExitUsage)
	s.run(t, nil, "ticket", "complete", "NOPE").mustFail(t, warpcli.ExitError, "not found", "404")
}

func TestModeHistoryCommand(t *testing.T) {
	s := startServer(t, nil)
	if r := s.run(t, nil, "mode", "history").mustSucceed(t); r.stdout != "no mode change recorded; 'warp mode' shows the current mode\n" {
		t.Errorf("empty history printed %q", r.stdout)
	}
	if r := s.run(t, nil, "mode", "history", "--json").mustSucceed(t); !strings.Contains(r.stdout, `"changes": []`) {
		t.Errorf("empty history --json printed %q", r.stdout)
	}
	// A host still on v1 makes the switch to activity need --force.
	s.run(t, nil, "ticket", "create", "T-1").mustSucceed(t)
	s.claim(t, "T-1", "old-host")
	s.heartbeat(t, client.HeartbeatRequest{Ticket: "T-1", Host: "old-host"})

	t0 := s.clock.Now()
	s.run(t, nil, "mode", "set", "legacy").mustSucceed(t)
	s.run(t, nil, "mode", "set", "legacy").mustSucceed(t) // no change, no event
	s.clock.Advance(2 * time.Hour)
	t1 := s.clock.Now()
	s.run(t, nil, "mode", "set", "activity").mustFail(t, warpcli.ExitError, "adoption_incomplete") // refused, no event
	s.run(t, nil, "mode", "set", "activity", "--force").mustSucceed(t)
	s.clock.Advance(30 * time.Minute)
	t2 := s.clock.Now()
	s.run(t, nil, "mode", "set", "transition").mustSucceed(t)
	s.clock.Advance(5 * time.Minute)

	r := s.run(t, nil, "mode", "history", "--json").mustSucceed(t)
	h := decode[client.ModeHistory](t, r.stdout)
	want := []client.ModeChange{
		{At: t0, From: "transition", To: "legacy"},
		{At: t1, From: "legacy", To: "activity", Forced: true},
		{At: t2, From: "activity", To: "transition"},
	}
	if len(h.Changes) != len(want) {
		t.Fatalf("history %+v, want %d changes", h.Changes, len(want))
	}
	for i, c := range h.Changes {
		w := want[i]
		if !c.At.Equal(w.At) || c.From != w.From || c.To != w.To || c.Forced != w.Forced || c.ID <= 0 || (i > 0 && c.ID <= h.Changes[i-1].ID) {
			t.Errorf("change %d: %+v, want %+v", i, c, w)
		}
	}
	if o := s.run(t, nil, "mode", "history", "-o", "json").mustSucceed(t); o.stdout != r.stdout {
		t.Errorf("-o json printed\n%s\nwant the --json output\n%s", o.stdout, r.stdout)
	}

	r = s.run(t, nil, "mode", "history").mustSucceed(t)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 4 || strings.Join(strings.Fields(lines[0]), " ") != "AT AGE FROM TO FORCED" {
		t.Fatalf("history table:\n%s", r.stdout)
	}
	for i, w := range []string{
		t0.Local().Format("2006-01-02 15:04:05") + " 2h35m ago transition legacy no",
		t1.Local().Format("2006-01-02 15:04:05") + " 35m00s ago legacy activity yes",
		t2.Local().Format("2006-01-02 15:04:05") + " 5m00s ago activity transition no",
	} {
		if got := strings.Join(strings.Fields(lines[i+1]), " "); got != w {
			t.Errorf("row %d: %q, want %q", i+1, got, w)
		}
	}
	if o := s.run(t, nil, "mode", "history", "-o", "text").mustSucceed(t); o.stdout != r.stdout {
		t.Errorf("-o text printed\n%s\nwant\n%s", o.stdout, r.stdout)
	}

	// The route: admin only, limit checked, the latest N.
	s.run(t, map[string]string{"WARP_TOKEN": agentToken}, "mode", "history").mustFail(t, warpcli.ExitError, "403", "admin token")
	cl := client.NewClient(s.URL(), adminToken)
	if h, err := cl.ModeHistory(context.Background(), 2); err != nil || len(h.Changes) != 2 || h.Changes[0].To != "activity" || h.Changes[1].To != "transition" {
		t.Errorf("history limit 2: %+v, %v", h, err)
	}
	var body map[string]any
	err := cl.Do(context.Background(), "GET", "/v1/mode/history?limit=0", nil, &body)
	if ae, ok := err.(*client.APIError); !ok || ae.Status != 400 || !strings.Contains(ae.Message, "limit") {
		t.Errorf("limit=0: %v", err)
	}
	s.run(t, nil, "mode", "history", "extra").mustFail(t, warpcli.ExitUsage)
}

// --log-format and --log-level (and WARP_LOG_FORMAT / WARP_LOG_LEVEL, a flag
// winning over the environment) choose slog's handler and level.
func TestServeLogFormatAndLevel(t *testing.T) {
	db := func() string { return filepath.Join(t.TempDir(), "w.db") }
	jsonLines := func(t *testing.T, log string) []map[string]any {
		t.Helper()
		var out []map[string]any
		sc := bufio.NewScanner(strings.NewReader(log))
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("log line %q is not JSON: %v", sc.Text(), err)
			}
			out = append(out, m)
		}
		return out
	}

	_, _, stop := serveInProcess(t, nil, "--addr", "127.0.0.1:0", "--db", db(), "--log-format", "json")
	r := stop()
	lines := jsonLines(t, r.stderr)
	if len(lines) < 3 || !strings.HasPrefix(lines[0]["msg"].(string), "warp listening on http://127.0.0.1:") ||
		lines[0]["level"] != "INFO" || lines[0]["mode"] != "transition" || lines[len(lines)-1]["msg"] != "warp stopped" {
		t.Errorf("json log:\n%s", r.stderr)
	}
	// From the environment; the flag wins.
	_, _, stop = serveInProcess(t, map[string]string{"WARP_LOG_FORMAT": "json"}, "--addr", "127.0.0.1:0", "--db", db())
	jsonLines(t, stop().stderr)
	_, _, stop = serveInProcess(t, map[string]string{"WARP_LOG_FORMAT": "json"}, "--addr", "127.0.0.1:0", "--db", db(), "--log-format", "text")
	if r := stop(); !strings.Contains(r.stderr, `level=INFO msg="warp listening on http://127.0.0.1:`) {
		t.Errorf("--log-format text over WARP_LOG_FORMAT=json:\n%s", r.stderr)
	}

	// Above info the start and stop lines are left out: the server is
	// found on a port picked beforehand.
	for _, c := range []struct {
		env  map[string]string
		args []string
	}{
		{nil, []string{"--log-level", "warn"}},
		{map[string]string{"WARP_LOG_LEVEL": "error"}, nil},
		{map[string]string{"WARP_LOG_LEVEL": "debug"}, []string{"--log-level", "error", "--log-format", "json"}},
	} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		var logs syncBuffer
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int, 1)
		cli := &warpcli.CLI{Stdout: &logs, Stderr: &logs, LookupEnv: func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }}
		go func() { done <- cli.Run(ctx, append([]string{"serve", "--addr", addr, "--db", db()}, c.args...)) }()
		cl := client.NewClient("http://"+addr, "")
		deadline := time.Now().Add(10 * time.Second)
		for cl.Healthz(context.Background()) != nil {
			if time.Now().After(deadline) {
				cancel()
				t.Fatalf("%v %v: not serving within 10s: %s", c.env, c.args, logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		if code := <-done; code != 0 {
			t.Fatalf("%v %v: exit %d: %s", c.env, c.args, code, logs.String())
		}
		if logs.String() != "" {
			t.Errorf("%v %v: logged below the level:\n%s", c.env, c.args, logs.String())
		}
	}

	for _, c := range []struct {
		env  map[string]string
		args []string
		want []string
	}{
		{nil, []string{"--log-format", "xml"}, []string{"--log-format", `"xml"`, "text or json"}},
		{nil, []string{"--log-level", "loud"}, []string{"--log-level", `"loud"`, "debug, info, warn or error"}},
		{nil, []string{"--log-level", "INFO"}, []string{"--log-level", `"INFO"`}},
		{map[string]string{"WARP_LOG_FORMAT": "logfmt"}, nil, []string{"--log-format", "WARP_LOG_FORMAT", "logfmt"}},
		{map[string]string{"WARP_LOG_LEVEL": "trace"}, nil, []string{"--log-level", "WARP_LOG_LEVEL", "trace"}},
	} {
		args := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db()}, c.args...)
		r := runCLI(t, c.env, time.Now, args...).mustFail(t, warpcli.ExitUsage, c.want...)
		if strings.Contains(r.stderr, "listening") {
			t.Errorf("%v %v: served before refusing:\n%s", c.env, c.args, r.stderr)
		}
	}
}

// Every command with --json also takes -o json, with the same output, and
// -o text for the tables; anything else, or -o text with --json, is a usage
// error.
func TestOutputFlagMatchesJSON(t *testing.T) {
	s := startServer(t, nil)
	s.run(t, nil, "ticket", "create", "T-1", "--title", "x").mustSucceed(t)
	s.claim(t, "T-1", "h1")
	s.heartbeat(t, client.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: "T-1", Epoch: 1, Host: "h1", ActivityAgeS: ptr(1.0)})
	s.run(t, nil, "mode", "set", "legacy").mustSucceed(t)
	s.clock.Advance(time.Hour)

	for _, args := range [][]string{
		{"ticket", "list"}, {"ticket", "show", "T-1"}, {"adoption"}, {"hosts"}, {"mode"}, {"mode", "history"},
		{"stale-unlock", "--dry-run"}, {"version"},
	} {
		want := s.run(t, nil, append(args, "--json")...).mustSucceed(t)
		if !json.Valid([]byte(want.stdout)) {
			t.Fatalf("warp %v --json printed %q", args, want.stdout)
		}
		for _, o := range [][]string{{"-o", "json"}, {"--output", "json"}, {"-ojson"}} {
			if got := s.run(t, nil, append(args, o...)...).mustSucceed(t); got != want {
				t.Errorf("warp %v %v: %+v\nwant %+v", args, o, got, want)
			}
		}
		text := s.run(t, nil, args...).mustSucceed(t)
		if got := s.run(t, nil, append(args, "-o", "text")...).mustSucceed(t); got != text {
			t.Errorf("warp %v -o text: %+v\nwant %+v", args, got, text)
		}
		s.run(t, nil, append(args, "-o", "yaml")...).mustFail(t, warpcli.ExitUsage, "--output", "want text or json")
		s.run(t, nil, append(args, "--json", "-o", "text")...).mustFail(t, warpcli.ExitUsage, "contradict")
	}
	// Writes answer the same shape either way.
	s.run(t, nil, "ticket", "create", "T-2", "-o", "json").mustSucceed(t)
	if tk := decode[client.Ticket](t, s.run(t, nil, "ticket", "create", "T-3", "-o", "json").mustSucceed(t).stdout); tk.ID != "T-3" {
		t.Errorf("create -o json: %+v", tk)
	}
	if m := decode[client.ModeBody](t, s.run(t, nil, "mode", "set", "transition", "-o", "json").mustSucceed(t).stdout); m.Mode != "transition" {
		t.Errorf("mode set -o json: %+v", m)
	}
	s.claim(t, "T-2", "h2")
	if tk := decode[client.Ticket](t, s.run(t, nil, "release", "T-2", "-o", "json").mustSucceed(t).stdout); tk.State != "open" {
		t.Errorf("release -o json: %+v", tk)
	}
	// Completion offers the two formats.
	if r := runCLI(t, map[string]string{}, time.Now, "__complete", "hosts", "-o", ""); !strings.HasPrefix(r.stdout, "text\njson\n") {
		t.Errorf("warp __complete hosts -o: %q", r.stdout)
	}
}

func TestNewCommandsHaveHelpWithAnExample(t *testing.T) {
	for _, args := range [][]string{{"ticket", "complete"}, {"mode", "history"}} {
		r := runCLI(t, map[string]string{}, time.Now, append(args, "--help")...)
		if r.code != 0 || !strings.Contains(r.stdout, "Examples:") || !strings.Contains(r.stdout, "warp "+strings.Join(args, " ")) {
			t.Errorf("warp %s --help: exit %d, output %q", strings.Join(args, " "), r.code, r.stdout)
		}
	}
	r := runCLI(t, map[string]string{}, time.Now, "serve", "--help")
	for _, want := range []string{"--log-format", "--log-level", "warp serve --log-format json"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("warp serve --help does not mention %q", want)
		}
	}
}
