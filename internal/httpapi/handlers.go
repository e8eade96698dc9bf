package httpapi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/gyrum-labs/warp/internal/apiobserve"
	"github.com/gyrum-labs/warp/internal/httpkit"
	"github.com/gyrum-labs/warp/internal/warp"
)

func (s *Server) createTicket(w http.ResponseWriter, r *http.Request) error {
	var req CreateTicketRequest
	if err := decodeRequest(r, &req, true); err != nil {
		return err
	}
	t, err := s.svc.CreateTicket(r.Context(), warp.NewTicket{ID: req.ID, Title: req.Title, Labels: req.Labels})
	if err != nil {
		return err
	}
	s.changed(apiobserve.Change{Kind: warp.EventCreated, Ticket: t.ID})
	writeJSON(w, http.StatusCreated, FromTicketView(warp.TicketView{Ticket: t}))
	return nil
}

func (s *Server) listTickets(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	o := warp.ListOptions{
		State:   warp.TicketState(q.Get("state")),
		Verdict: warp.Verdict(q.Get("verdict")),
		Host:    q.Get("host"),
		Labels:  q["label"],
		Cursor:  q.Get("cursor"),
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return warp.Errorf(warp.ErrInvalid, "limit %q is invalid: want an integer from 1 to %d", v, warp.MaxListLimit)
		}
		o.Limit = n
	}
	page, err := s.svc.ListTickets(r.Context(), o)
	if err != nil {
		return err
	}
	out := TicketList{Tickets: make([]Ticket, len(page.Tickets)), NextCursor: page.NextCursor}
	for i, v := range page.Tickets {
		out.Tickets[i] = FromTicketView(v)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getTicket(w http.ResponseWriter, r *http.Request) error {
	v, err := s.svc.Ticket(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, FromTicketView(v))
	return nil
}

func (s *Server) leaseStatus(w http.ResponseWriter, r *http.Request) error {
	v := r.PathValue("epoch")
	epoch, err := strconv.ParseInt(v, 10, 64)
	if err != nil || epoch <= 0 {
		return warp.Errorf(warp.ErrInvalid, "epoch %q is invalid: want a positive integer", v)
	}
	st, err := s.svc.LeaseOf(r.Context(), r.PathValue("id"), epoch)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, LeaseStatus{Ticket: st.Ticket, TicketState: string(st.TicketState),
		CurrentEpoch: st.CurrentEpoch, Lease: FromLease(st.Lease)})
	return nil
}

func (s *Server) editTicket(w http.ResponseWriter, r *http.Request) error {
	var req EditTicketRequest
	if err := decodeRequest(r, &req, false); err != nil {
		return err
	}
	v, err := s.svc.EditTicket(r.Context(), r.PathValue("id"), warp.TicketEdit{Title: req.Title, Labels: req.Labels,
		AddLabels: req.AddLabels, RemoveLabels: req.RemoveLabels})
	if err != nil {
		return err
	}
	s.changed(apiobserve.Change{Kind: warp.EventEdited, Ticket: v.Ticket.ID, Epoch: v.Ticket.Epoch})
	writeJSON(w, http.StatusOK, FromTicketView(v))
	return nil
}

func (s *Server) cancelTicket(w http.ResponseWriter, r *http.Request) error {
	return s.changeTicket(w, r, warp.EventCancelled, s.svc.Cancel)
}

func (s *Server) reopenTicket(w http.ResponseWriter, r *http.Request) error {
	return s.changeTicket(w, r, warp.EventReopened, s.svc.Reopen)
}

// changeTicket is a cancel or a reopen: the reason of the body, the
// service's change, the change observer, the ticket.
func (s *Server) changeTicket(w http.ResponseWriter, r *http.Request, kind warp.EventKind,
	change func(ctx context.Context, id, reason string) (warp.TicketView, error)) error {
	var req TicketChangeRequest
	if err := decodeRequest(r, &req, true); err != nil {
		return err
	}
	v, err := change(r.Context(), r.PathValue("id"), req.Reason)
	if err != nil {
		return err
	}
	s.changed(apiobserve.Change{Kind: kind, Ticket: v.Ticket.ID, Epoch: v.Ticket.Epoch, Reason: req.Reason})
	writeJSON(w, http.StatusOK, FromTicketView(v))
	return nil
}

func (s *Server) ticketEvents(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	var after int64
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return warp.Errorf(warp.ErrInvalid, "after %q is invalid: want the id of an event", v)
		}
		after = n
	}
	limit := 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > warp.MaxListLimit {
			return warp.Errorf(warp.ErrInvalid, "limit %q is invalid: want an integer from 1 to %d", v, warp.MaxListLimit)
		}
		limit = n
	}
	evs, err := s.svc.Events(r.Context(), r.PathValue("id"), after, limit)
	if err != nil {
		return err
	}
	out := EventList{Events: make([]Event, len(evs))}
	for i, e := range evs {
		out.Events[i] = FromEvent(e)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) claim(w http.ResponseWriter, r *http.Request) error {
	var req ClaimRequest
	if err := decodeRequest(r, &req, true); err != nil {
		return err
	}
	v, err := s.svc.Claim(r.Context(), r.PathValue("id"), warp.ClaimRequest{Agent: req.Agent, Host: req.Host})
	if err != nil {
		return err
	}
	s.changed(apiobserve.Change{Kind: warp.EventClaimed, Ticket: v.Ticket.ID, Epoch: v.Ticket.Epoch})
	writeJSON(w, http.StatusOK, FromTicketView(v))
	return nil
}

// recordSnapshot records the snapshot of an attempt (the lease's holder,
// held or ended; once per attempt: a second is 409 conflict).
func (s *Server) recordSnapshot(w http.ResponseWriter, r *http.Request) error {
	epoch, err := strconv.ParseInt(r.PathValue("epoch"), 10, 64)
	if err != nil || epoch <= 0 {
		return warp.Errorf(warp.ErrInvalid, "epoch %q in the path is not a positive integer", r.PathValue("epoch"))
	}
	var req Snapshot
	if err := decodeRequest(r, &req, true); err != nil {
		return err
	}
	a, err := s.svc.RecordSnapshot(r.Context(), r.PathValue("id"), epoch, warp.Snapshot{State: req.State, Commit: req.Commit,
		Ref: req.Ref, Base: req.Base, Branch: req.Branch, Remote: req.Remote, Pushed: req.Pushed, Host: req.Host, Detail: req.Detail})
	if err != nil {
		return err
	}
	s.changed(apiobserve.Change{Kind: warp.EventSnapshot, Ticket: a.Lease.Ticket, Epoch: a.Lease.Epoch})
	writeJSON(w, http.StatusOK, FromAttempt(a))
	return nil
}

func (s *Server) claimNext(w http.ResponseWriter, r *http.Request) error {
	var req ClaimNextRequest
	if err := decodeRequest(r, &req, true); err != nil {
		return err
	}
	v, err := s.svc.ClaimNext(r.Context(), warp.ClaimRequest{Agent: req.Agent, Host: req.Host, Labels: req.Labels})
	if err != nil {
		return err
	}
	s.changed(apiobserve.Change{Kind: warp.EventClaimed, Ticket: v.Ticket.ID, Epoch: v.Ticket.Epoch})
	writeJSON(w, http.StatusOK, FromTicketView(v))
	return nil
}

func (s *Server) release(w http.ResponseWriter, r *http.Request) error {
	var req ReleaseRequest
	if err := decodeRequest(r, &req, true); err != nil {
		return err
	}
	// Epoch 0 means "whatever lease is current": an operator's call, not a
	// fenced agent write.
	if req.Epoch == 0 && CallerRole(r.Context()) < RoleAdmin {
		return fmt.Errorf("%w: releasing without an epoch needs the admin role; agents send the epoch of their claim", httpkit.ErrForbidden)
	}
	var v warp.TicketView
	var err error
	switch {
	case req.IdleForS < 0 || math.IsNaN(req.IdleForS) || req.IdleForS > maxIdleForS:
		return warp.Errorf(warp.ErrInvalid, "idle_for_s must be between 0 and %d seconds, got %v", maxIdleForS, req.IdleForS)
	case req.IdleForS > 0:
		v, err = s.svc.ReleaseIdle(r.Context(), r.PathValue("id"), req.Epoch, req.Reason, time.Duration(req.IdleForS*float64(time.Second)))
	default:
		v, err = s.svc.Release(r.Context(), r.PathValue("id"), req.Epoch, req.Reason)
	}
	if err != nil {
		return err
	}
	s.changed(apiobserve.Change{Kind: warp.EventReleased, Ticket: v.Ticket.ID, Epoch: v.Ticket.Epoch, Reason: req.Reason})
	writeJSON(w, http.StatusOK, FromTicketView(v))
	return nil
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request) error {
	var req CompleteRequest
	if err := decodeRequest(r, &req, true); err != nil {
		return err
	}
	if req.Epoch == 0 && CallerRole(r.Context()) < RoleAdmin {
		return fmt.Errorf("%w: completing without an epoch needs the admin role; agents send the epoch of their claim", httpkit.ErrForbidden)
	}
	v, err := s.svc.Complete(r.Context(), r.PathValue("id"), req.Epoch, req.PRURL)
	if err != nil {
		return err
	}
	s.changed(apiobserve.Change{Kind: warp.EventCompleted, Ticket: v.Ticket.ID, Epoch: v.Ticket.Epoch})
	writeJSON(w, http.StatusOK, FromTicketView(v))
	return nil
}

func (s *Server) heartbeat(w http.ResponseWriter, r *http.Request) error {
	if v, probe := r.Header[HeaderProbe]; probe {
		return s.probeHeartbeat(w, r, v)
	}
	h, err := DecodeHeartbeat(r.Body)
	out := apiobserve.HeartbeatOutcome{SchemaVersion: h.SchemaVersion, Exit: h.Exit, Code: "ok", Ticket: h.Ticket}
	var res warp.HeartbeatResult
	if err == nil {
		res, err = s.svc.Heartbeat(r.Context(), h)
		err = notAnswering(r.Context(), err)
	}
	if s.cfg.OnHeartbeat != nil {
		if err != nil {
			out.Code, _ = httpkit.ErrorStatus(err)
		} else {
			out.Extended, out.Epoch = res.Extended, res.Epoch
		}
		s.cfg.OnHeartbeat(out)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, HeartbeatResponse{
		Ticket: res.Ticket, Epoch: res.Epoch, ExpiresAt: res.ExpiresAt, Verdict: string(res.Verdict),
		Mode: string(res.Mode), Extended: res.Extended, Note: res.Note, MaxRetryGapS: res.MaxRetryGap.Seconds(),
		ExpiresInS: max(res.ExpiresAt.Sub(s.svc.Now()), 0).Seconds(),
	})
	return nil
}

// probeHeartbeat answers a probe (HeaderProbe): the token was checked as
// a heartbeat's (the route's role), the body is decoded and validated as
// a heartbeat's, and nothing is applied, recorded or counted — gyrum
// doctor's check that warp takes its heartbeats leaves no trace in the
// metrics (warp_heartbeats_total) or the database.
func (s *Server) probeHeartbeat(w http.ResponseWriter, r *http.Request, values []string) error {
	if len(values) != 1 || values[0] != ProbeValue {
		return warp.Errorf(warp.ErrInvalid, "header %s must be %q, got %q", HeaderProbe, ProbeValue, values)
	}
	h, err := DecodeHeartbeat(r.Body)
	if err == nil {
		err = warp.ValidateHeartbeat(h)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, HeartbeatProbe{Probe: true, SchemaVersion: h.SchemaVersion, Ticket: h.Ticket})
	return nil
}

func (s *Server) adoption(w http.ResponseWriter, r *http.Request) error {
	window := warp.DefaultAdoptionWindow
	if v := r.URL.Query().Get("window"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return warp.Errorf(warp.ErrInvalid, "window %q is invalid: want a positive Go duration like 24h", v)
		}
		window = d
	}
	limit, cursor, err := httpkit.PageParams(r.URL.Query())
	if err != nil {
		return err
	}
	a, err := s.svc.Adoption(r.Context(), window)
	if err != nil {
		return err
	}
	out := FromAdoption(a)
	out.Hosts, out.NextCursor = httpkit.Page(out.Hosts, func(h HostAdoption) string { return h.Host }, cursor, limit)
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getMode(w http.ResponseWriter, r *http.Request) error {
	m, err := s.svc.Mode(r.Context())
	if err != nil {
		return err
	}
	now := s.svc.Now()
	writeJSON(w, http.StatusOK, ModeStatus{Mode: string(m), Now: &now})
	return nil
}

// maxIdleForS bounds a conditional release's idle time (ten years).
const maxIdleForS = 10 * 365 * 24 * 3600

func (s *Server) setMode(w http.ResponseWriter, r *http.Request) error {
	var req ModeBody
	if err := decodeRequest(r, &req, false); err != nil {
		return err
	}
	m, err := warp.ParseMode(req.Mode)
	if err != nil {
		return err
	}
	m, err = s.svc.SetMode(r.Context(), m, req.Force)
	if err != nil {
		return err
	}
	s.changed(apiobserve.Change{Kind: warp.EventModeChanged, Mode: string(m)})
	writeJSON(w, http.StatusOK, ModeStatus{Mode: string(m)})
	return nil
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, Health{Status: "ok"})
	return nil
}

// readyz pings the database within ReadyTimeout: a database that does
// not answer makes it answer 503 within a second, not hang with the ping.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), ReadyTimeout)
	defer cancel()
	if err := s.svc.Ping(ctx); err != nil {
		if err = notAnswering(ctx, err); !errors.Is(err, warp.ErrUnavailable) {
			err = fmt.Errorf("%w: ping: %w", warp.ErrUnavailable, err)
		}
		return err
	}
	writeJSON(w, http.StatusOK, Health{Status: "ready"})
	return nil
}
