package warpcli_test

import (
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/warpcli"
)

// warp ticket edit, cancel, reopen and list --label against a real warp
// (issue 46), with their mistakes.
func TestTicketEditCancelReopen(t *testing.T) {
	s := startServer(t, nil)
	s.run(t, nil, "ticket", "create", "T-1", "--label", "backend").mustSucceed(t)
	s.run(t, nil, "ticket", "create", "T-2", "--label", "backend,db").mustSucceed(t)
	s.run(t, nil, "ticket", "create", "T-3").mustSucceed(t)

	r := s.run(t, nil, "ticket", "edit", "T-1", "--title", "migrate the cron", "--add-label", "db", "--remove-label", "backend").mustSucceed(t)
	if r.stdout != "T-1: title \"migrate the cron\", labels db\n" {
		t.Errorf("edit printed %q", r.stdout)
	}
	r = s.run(t, nil, "ticket", "list", "--label", "db", "--json").mustSucceed(t)
	if l := decode[client.TicketList](t, r.stdout); len(l.Tickets) != 2 || l.Tickets[0].ID != "T-1" || l.Tickets[1].ID != "T-2" {
		t.Errorf("list --label db: %+v", l.Tickets)
	}
	r = s.run(t, nil, "ticket", "list", "--label", "db,backend").mustSucceed(t)
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], "T-2") {
		t.Errorf("list --label db,backend:\n%s", r.stdout)
	}
	r = s.run(t, nil, "ticket", "edit", "T-2", "--label", "", "--json").mustSucceed(t)
	if tk := decode[client.Ticket](t, r.stdout); len(tk.Labels) != 0 {
		t.Errorf("--label \"\" left %q", tk.Labels)
	}
	r = s.run(t, nil, "ticket", "show", "T-1").mustSucceed(t)
	if !strings.Contains(r.stdout, "edited") || !strings.Contains(r.stdout, "labels=db") || !strings.Contains(r.stdout, "title=migrate the cron") {
		t.Errorf("show after the edit:\n%s", r.stdout)
	}

	// Cancel a claimed ticket: its lease is released.
	s.claim(t, "T-1", "build-1")
	r = s.run(t, nil, "ticket", "cancel", "T-1", "--reason", "superseded by T-2").mustSucceed(t)
	if r.stdout != "cancelled T-1; lease 1 of agent O on host build-1 released\n" {
		t.Errorf("cancel printed %q", r.stdout)
	}
	r = s.run(t, nil, "ticket", "show", "T-1", "--json").mustSucceed(t)
	if d := decode[warpcli.TicketDetail](t, r.stdout); d.Ticket.State != "cancelled" || d.Ticket.Lease.EndReason != "cancelled: superseded by T-2" {
		t.Errorf("after the cancel: %+v %+v", d.Ticket, d.Ticket.Lease)
	}
	r = s.run(t, nil, "ticket", "list", "--state", "cancelled", "--json").mustSucceed(t)
	if l := decode[client.TicketList](t, r.stdout); len(l.Tickets) != 1 || l.Tickets[0].ID != "T-1" {
		t.Errorf("list --state cancelled: %+v", l.Tickets)
	}
	s.run(t, nil, "ticket", "cancel", "T-1").mustFail(t, warpcli.ExitError, "409", "already cancelled")
	r = s.run(t, nil, "ticket", "reopen", "T-1").mustSucceed(t)
	if r.stdout != "reopened T-1: it is open; the next claim gets epoch 2\n" {
		t.Errorf("reopen printed %q", r.stdout)
	}
	s.run(t, nil, "ticket", "reopen", "T-1").mustFail(t, warpcli.ExitError, "409", "already open")
	r = s.run(t, nil, "ticket", "cancel", "T-3", "-o", "json").mustSucceed(t)
	if tk := decode[client.Ticket](t, r.stdout); tk.State != "cancelled" || tk.Lease != nil {
		t.Errorf("cancel of an open ticket -o json: %+v", tk)
	}

	// Mistakes: usage errors before any request, and what the server refuses.
	s.run(t, nil, "ticket", "edit", "T-1").mustFail(t, warpcli.ExitUsage, "nothing to change")
	s.run(t, nil, "ticket", "edit", "T-1", "--label", "a", "--add-label", "b").mustFail(t, warpcli.ExitUsage, "--label")
	s.run(t, nil, "ticket", "edit", "T-1", "--add-label", "no spaces").mustFail(t, warpcli.ExitUsage, "label")
	s.run(t, nil, "ticket", "edit", "bad id!", "--title", "x").mustFail(t, warpcli.ExitUsage, "invalid")
	s.run(t, nil, "ticket", "edit", "NOPE", "--title", "x").mustFail(t, warpcli.ExitError, "not found")
	s.run(t, nil, "ticket", "cancel").mustFail(t, warpcli.ExitUsage)
	s.run(t, nil, "ticket", "cancel", "T-2", "--reason", strings.Repeat("x", 257)).mustFail(t, warpcli.ExitUsage, "--reason")
	s.run(t, nil, "ticket", "reopen", "NOPE").mustFail(t, warpcli.ExitError, "not found")
	s.run(t, nil, "ticket", "list", "--label", "bad label").mustFail(t, warpcli.ExitUsage, "--label")
	s.run(t, nil, "ticket", "list", "--label", "db", "--watch").mustFail(t, warpcli.ExitUsage, "--watch")
	s.run(t, map[string]string{"WARP_TOKEN": agentToken}, "ticket", "cancel", "T-2").mustFail(t, warpcli.ExitError, "403", "admin token")
}

// gen-man is listed in the help with the other commands (issue 46).
func TestGenManIsListed(t *testing.T) {
	r := runCLI(t, map[string]string{}, nil, "--help").mustSucceed(t)
	if !strings.Contains(r.stdout, "gen-man") {
		t.Errorf("warp --help does not list gen-man:\n%s", r.stdout)
	}
}
