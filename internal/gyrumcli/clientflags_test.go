package gyrumcli_test

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/clikit/clikittest"
	"github.com/gyrum-labs/warp/internal/doctor"
	"github.com/gyrum-labs/warp/internal/gyrumcli"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
	"github.com/gyrum-labs/warp/internal/warp"
)

const deadURL = "http://127.0.0.1:1" // nothing listens there

// --url and --token (root flags, before or after the command) win over
// WARP_URL and WARP_TOKEN for every command that talks to warp: the claim,
// the loop start-work spawns (it gets the token in its environment),
// release, complete-pr (--url also wins over lease.json's warp_url) and
// doctor's probe. Both are pointed at nothing here, so only the flags work.
func TestURLAndTokenFlagsBeatTheEnvironment(t *testing.T) {
	const tok = "agent-token"
	e := newEnv(t)
	e.ws = warptest.StartWithTokens(t, warp.DefaultPolicy(), []httpapi.Token{{Role: httpapi.RoleAgent, Secret: tok}})
	e.vars["WARP_URL"], e.vars["WARP_TOKEN"] = deadURL, "not-a-token"
	home := t.TempDir()
	e.vars["HOME"], e.vars["CLAUDE_CONFIG_DIR"] = home, filepath.Join(home, ".claude")
	e.ws.Create("T-1")
	e.ws.Create("T-2")
	_, watched := agent(t, "sleep", "1000")
	pid := strconv.Itoa(watched.PID)
	wt := mkdir(t)

	// Without the flags the environment counts: nothing listens there.
	r := e.gyrum(wt, "", "start-work", "T-1", "--watch-pid", pid, "--json")
	if r.code != 1 || !strings.Contains(r.stderr, "127.0.0.1:1") || !strings.Contains(r.stderr, "--url") {
		t.Fatalf("start-work with WARP_URL on nothing: exit %d, stderr %q", r.code, r.stderr)
	}
	// The real binary, the flags before the command.
	sr := e.startResult(e.gyrum(wt, "", "--url", e.ws.URL(), "--token", tok, "start-work", "T-1", "--watch-pid", pid, "-o", "json"))
	if sr.Ticket != "T-1" || sr.WarpURL != e.ws.URL() {
		t.Fatalf("start-work printed %+v", sr)
	}
	d, _ := gyrumdir.Open(wt)
	if l, err := d.ReadLease(); err != nil || l.WarpURL != e.ws.URL() {
		t.Fatalf("lease.json %+v, %v: want warp_url %s", l, err, e.ws.URL())
	}
	waitFor(t, "two answered heartbeats", func() bool { return len(e.ws.Answered()) >= 2 })
	for _, b := range e.ws.Answered() {
		if b.Status != 200 {
			t.Fatalf("the loop got %d: it did not get --token", b.Status)
		}
	}
	// release uses lease.json's warp_url, not WARP_URL, which names
	// another server: the token is kept from it, the server refuses, the
	// hint says to name it with --url, and lease.json is kept.
	r = e.gyrum(wt, "", "release")
	if r.code != 1 || !strings.Contains(r.stderr, "401") || !strings.Contains(r.stderr, "run the command again with --url "+e.ws.URL()) {
		t.Fatalf("release with WARP_URL elsewhere: exit %d, stderr %q", r.code, r.stderr)
	}
	// The token goes only to the server --url (or WARP_URL) names, not
	// to lease.json's alone (a repository can commit one).
	r = e.gyrum(wt, "", "release", "--token", tok)
	if r.code != 1 || !strings.Contains(r.stderr, "token was not sent") {
		t.Fatalf("release --token, WARP_URL elsewhere: exit %d, stderr %q", r.code, r.stderr)
	}
	r = e.gyrum(wt, "", "release", "--url", e.ws.URL(), "--token", tok, "-o", "json")
	var fr gyrumcli.FinishResult
	if err := json.Unmarshal([]byte(r.stdout), &fr); r.code != 0 || err != nil || fr.Action != "released" || fr.Server != "ok" {
		t.Fatalf("release --token: exit %d, %q (%v), stderr %q", r.code, r.stdout, err, r.stderr)
	}
	if v := e.ws.Ticket("T-1"); v.Ticket.State != warp.TicketOpen {
		t.Fatalf("T-1 is %s after the release", v.Ticket.State)
	}

	// In-process, flags after the command; then the server "moves": the
	// lease.json of the claim names nothing, --url wins over it.
	wt2 := mkdir(t)
	r = e.inproc(wt2, "start-work", "T-2", "--watch-pid", pid, "--json", "--url", e.ws.URL(), "--token", tok)
	e.startResult(r)
	d2, _ := gyrumdir.Open(wt2)
	l, err := d2.ReadLease()
	if err != nil {
		t.Fatal(err)
	}
	l.WarpURL = deadURL
	if err := d2.WriteLease(l); err != nil {
		t.Fatal(err)
	}
	r = e.inproc(wt2, "complete-pr", "--pr", "https://example.com/pull/7", "--url", e.ws.URL(), "--token", tok, "--json")
	if err := json.Unmarshal([]byte(r.stdout), &fr); r.code != 0 || err != nil || fr.Action != "completed" {
		t.Fatalf("complete-pr --url --token: exit %d, %q (%v), stderr %q", r.code, r.stdout, err, r.stderr)
	}
	if v := e.ws.Ticket("T-2"); v.Ticket.State != warp.TicketCompleted || v.Lease.PRURL != "https://example.com/pull/7" {
		t.Fatalf("T-2 after complete-pr: %s, lease %+v", v.Ticket.State, v.Lease)
	}

	// doctor probes the flags' server with the flags' token.
	warpCheck := func(r result) doctor.Check {
		t.Helper()
		var rep doctor.Report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("doctor -o json printed %q: %v", r.stdout, err)
		}
		for _, c := range rep.Checks {
			if c.Name == "warp" {
				return c
			}
		}
		t.Fatalf("no warp check in %+v", rep.Checks)
		return doctor.Check{}
	}
	if c := warpCheck(e.gyrum(home, "", "doctor", "-o", "json")); c.Status != "fail" {
		t.Errorf("doctor with WARP_URL on nothing: warp check %+v", c)
	}
	if c := warpCheck(e.gyrum(home, "", "--url", e.ws.URL(), "--token", tok, "doctor", "-o", "json")); c.Status != "ok" {
		t.Errorf("doctor --url --token: warp check %+v", c)
	}
	if c := warpCheck(e.gyrum(home, "", "--url", e.ws.URL(), "doctor", "-o", "json")); c.Status != "fail" || !strings.Contains(c.Detail+c.Fix, "token") {
		t.Errorf("doctor --url with a wrong WARP_TOKEN: warp check %+v", c)
	}

	// A bad --url is a usage error naming the flag.
	for _, u := range []string{"ftp://x", "127.0.0.1:7077", ""} {
		r := e.inproc(wt, "--url", u, "status")
		if r.code != gyrumcli.ExitUsage || !strings.Contains(r.stderr, "--url") {
			t.Errorf("--url %q: exit %d, stderr %q", u, r.code, r.stderr)
		}
	}
}

// The hook's fast path stays a fast path: it does not talk to warp, takes
// --url/--token like any other argument it ignores, and still records the
// activity; the same through the command tree.
func TestTouchActivityIgnoresClientFlags(t *testing.T) {
	e := newEnv(t)
	d := hookWorktree(t, e)
	for i, args := range [][]string{
		{"touch-activity", "--url", "::not a url::", "--token", "x", "--dir", d.Worktree},
		{"--url", deadURL, "--token", "x", "touch-activity", "--dir", d.Worktree},
	} {
		d.TouchActivity(time.Now().Add(-time.Hour))
		before := e.ws.Count()
		silentOK(t, e.gyrum(d.Worktree, `{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_use_id":"t`+strconv.Itoa(i)+`"}`, args...))
		if !touched(t, d) {
			t.Errorf("gyrum %v did not record the activity", args)
		}
		if e.ws.Count() != before {
			t.Errorf("gyrum %v talked to warp", args)
		}
	}
}

// Every command with --json also takes -o json (the same output) and -o
// text (the default output); anything else, or -o text with --json, is a
// usage error.
func TestOutputFlag(t *testing.T) {
	clikittest.CheckOutputFlags(t, (&gyrumcli.App{}).RootCommand(), 8)

	e := newEnv(t)
	e.vars["GYRUM_HOME"] = t.TempDir()
	dir := t.TempDir()
	for _, args := range [][]string{{"version"}, {"status"}, {"watchdog", "sweep", "--dry-run"}} {
		want := e.inproc(dir, append(args, "--json")...)
		if want.code != 0 || !json.Valid([]byte(want.stdout)) {
			t.Fatalf("gyrum %v --json: exit %d, %q, stderr %q", args, want.code, want.stdout, want.stderr)
		}
		if got := e.inproc(dir, append(args, "-o", "json")...); got != want {
			t.Errorf("gyrum %v -o json: %+v\nwant %+v", args, got, want)
		}
		if got := e.inproc(dir, append(args, "--output=json")...); got != want {
			t.Errorf("gyrum %v --output=json: %+v\nwant %+v", args, got, want)
		}
		text := e.inproc(dir, args...)
		if got := e.inproc(dir, append(args, "-o", "text")...); got != text || json.Valid([]byte(got.stdout)) {
			t.Errorf("gyrum %v -o text: %+v\nwant %+v", args, got, text)
		}
		r := e.inproc(dir, append(args, "-o", "yaml")...)
		if r.code != gyrumcli.ExitUsage || !strings.Contains(r.stderr, "--output") || !strings.Contains(r.stderr, "want text or json") {
			t.Errorf("gyrum %v -o yaml: exit %d, stderr %q", args, r.code, r.stderr)
		}
		r = e.inproc(dir, append(args, "--json", "-o", "text")...)
		if r.code != gyrumcli.ExitUsage || !strings.Contains(r.stderr, "contradict") {
			t.Errorf("gyrum %v --json -o text: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	// Completion offers the two formats.
	if r := e.inproc(dir, "__complete", "status", "-o", ""); !strings.HasPrefix(r.stdout, "text\njson\n") {
		t.Errorf("gyrum __complete status -o: %q", r.stdout)
	}
}
