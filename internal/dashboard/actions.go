package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gyrum-labs/warp/internal/apiobserve"
	"github.com/gyrum-labs/warp/internal/httpkit"
	"github.com/gyrum-labs/warp/internal/warp"
)

// The operator's actions: release a ticket's lease, cancel a ticket,
// reopen one. Each has a confirmation page (GET /tickets/{id}/ACTION: what
// it will do, a reason, the button) whose form posts to the same path. The
// server lets a signed-in admin's session post there with the session's
// form token (httpapi.Server.MountAction), and names the session in the
// events the action records; a viewer's session sees no action. The
// release carries the epoch the page showed, so a lease claimed again
// since is not released by a stale page.

// action is one kind of operator action.
type action struct {
	Name    string // the path segment: release, cancel, reopen
	Heading string // the confirmation page's
	Button  string
	Done    string // the notice after it, on the ticket page
	// Reason is the form's default reason.
	Reason string
	// allowed says whether the ticket's state allows it, and otherwise why not.
	allowed func(v warp.TicketView) string
}

var actions = map[string]action{
	"release": {Name: "release", Heading: "Release the lease of", Button: "Release the lease", Done: "released", Reason: "operator",
		allowed: func(v warp.TicketView) string {
			if v.Ticket.State != warp.TicketClaimed || v.Lease == nil || !v.Lease.Held() {
				return "it holds no lease to release (it is " + string(v.Ticket.State) + ")"
			}
			return ""
		}},
	"cancel": {Name: "cancel", Heading: "Cancel", Button: "Cancel the ticket", Done: "cancelled",
		allowed: func(v warp.TicketView) string {
			if v.Ticket.State != warp.TicketOpen && v.Ticket.State != warp.TicketClaimed && v.Ticket.State != warp.TicketBlocked {
				return "only an open, claimed or blocked ticket is cancelled (it is " + string(v.Ticket.State) + ")"
			}
			return ""
		}},
	"reopen": {Name: "reopen", Heading: "Reopen", Button: "Reopen the ticket", Done: "reopened",
		allowed: func(v warp.TicketView) string {
			if v.Ticket.State != warp.TicketCompleted && v.Ticket.State != warp.TicketCancelled && v.Ticket.State != warp.TicketBlocked {
				return "only a completed, cancelled or blocked ticket is reopened (it is " + string(v.Ticket.State) + ")"
			}
			return ""
		}},
}

// actionOrder is the order the ticket page offers them in.
var actionOrder = []string{"release", "cancel", "reopen"}

// actionLink is one action the ticket page offers.
type actionLink struct {
	Name, Label, URL string
}

// ticketActions returns the actions the operator in ctx may take on v: none
// for a viewer, or a request without a session.
func ticketActions(op httpkit.Operator, ok bool, v warp.TicketView) []actionLink {
	if !ok || !op.CanAct {
		return nil
	}
	var out []actionLink
	for _, name := range actionOrder {
		a := actions[name]
		if a.allowed(v) == "" {
			out = append(out, actionLink{Name: name, Label: a.Button + "…", URL: actionURL(v.Ticket.ID, name)})
		}
	}
	return out
}

func actionURL(id, name string) string { return "/tickets/" + url.PathEscape(id) + "/" + name }

// confirmData is the confirmation page of an action.
type confirmData struct {
	page
	Action action
	View   warp.TicketView
	Row    rowView
	URL    string
	CSRF   string
	CanAct bool
	// Session: the request came with a dashboard session (else a bearer
	// token, which posts the form's fields itself).
	Session  bool
	Operator string
	Epoch    int64 // the lease the release is for
	// NextEpoch is the epoch of the ticket's next claim.
	NextEpoch int64
	Reason    string
	// Refused says why the ticket's state does not allow it; Problem what
	// went wrong with a post (Status, Code of the error table).
	Refused string
	Problem string
	Status  int
	Code    string
}

// confirm serves GET /tickets/{id}/{action}: the confirmation page.
func (d *Dashboard) confirm(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		d.renderConfirm(w, r, name, http.StatusOK, nil, "")
	}
}

// renderConfirm renders the confirmation page of action name for the
// ticket of r, with err (a failed post) said on it.
func (d *Dashboard) renderConfirm(w http.ResponseWriter, r *http.Request, name string, status int, err error, reason string) {
	ctx := r.Context()
	a := actions[name]
	id := r.PathValue("id")
	data := confirmData{Action: a, URL: actionURL(id, name), Reason: reason, Status: status}
	var perr error
	// Nav "confirm": the live script leaves the page alone (a refresh
	// would wipe the reason being typed); the facts it shows are read
	// again when the form is sent.
	if data.page, perr = d.newPage(ctx, "warp · "+a.Button+" "+id, "confirm"); perr != nil {
		d.fail(w, r, perr)
		return
	}
	if data.View, perr = d.svc.Ticket(ctx, id); perr != nil {
		d.fail(w, r, perr)
		return
	}
	data.Row = newRowViewWith(data.View, data.Now, d.svc.Policy())
	data.NextEpoch = data.View.Ticket.Epoch + 1
	if data.View.Lease != nil && data.View.Lease.Held() {
		data.Epoch = data.View.Lease.Epoch
	}
	if err == nil && reason == "" {
		data.Reason = a.Reason
	}
	op, ok := httpkit.OperatorFrom(ctx)
	data.Session, data.CanAct, data.CSRF, data.Operator = ok, ok && op.CanAct, op.CSRF, op.Name
	data.Refused = a.allowed(data.View)
	switch {
	case err != nil:
	case ok && !op.CanAct:
		// A viewer's session reads only.
		status, data.Code = http.StatusForbidden, httpkit.CodeForbidden
	case data.Refused != "":
		status, data.Code = http.StatusConflict, httpkit.CodeConflict
	}
	data.Status = status
	if err != nil {
		data.Code, data.Status = httpkit.ErrorStatus(err)
		data.Problem = warp.ErrorMessage(err)
		if data.Status >= 500 {
			d.log.Error("dashboard action failed", "action", name, "ticket", id, "status", data.Status, "err", err)
			data.Problem = "internal error; the server log has the detail"
			if data.Status == http.StatusServiceUnavailable {
				data.Problem = "the database is unavailable; retry later"
			}
		}
		status = data.Status
	}
	d.render(w, r, status, "confirm.html", data)
}

// act serves POST /tickets/{id}/{action}: the action itself, then back to
// the ticket page with a notice (303), or the confirmation page again with
// what went wrong. The server checked the session and its form token.
func (d *Dashboard) act(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		id := r.PathValue("id")
		if err := r.ParseForm(); err != nil {
			if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
				err = fmt.Errorf("%w: the form is over %d bytes", httpkit.ErrBodyTooLarge, mbe.Limit)
			} else {
				err = warp.Errorf(warp.ErrInvalid, "the form does not parse: %v", err)
			}
			d.renderConfirm(w, r, name, http.StatusBadRequest, err, "")
			return
		}
		reason := strings.TrimSpace(r.PostForm.Get("reason"))
		var v warp.TicketView
		var err error
		switch name {
		case "release":
			var epoch int64
			if s := r.PostForm.Get("epoch"); s != "" {
				if epoch, err = strconv.ParseInt(s, 10, 64); err != nil || epoch <= 0 {
					err = warp.Errorf(warp.ErrInvalid, "epoch %q is invalid: reload the ticket's page", s)
				}
			}
			if err == nil {
				v, err = d.svc.Release(ctx, id, epoch, reason)
			}
		case "cancel":
			v, err = d.svc.Cancel(ctx, id, reason)
		case "reopen":
			v, err = d.svc.Reopen(ctx, id, reason)
		}
		if err != nil {
			d.renderConfirm(w, r, name, http.StatusOK, err, reason)
			return
		}
		kind := map[string]warp.EventKind{"release": warp.EventReleased, "cancel": warp.EventCancelled, "reopen": warp.EventReopened}[name]
		d.OnChange(apiobserve.Change{Kind: kind, Ticket: v.Ticket.ID, Epoch: v.Ticket.Epoch, Reason: reason})
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, "/tickets/"+url.PathEscape(id)+"?"+url.Values{"done": {actions[name].Done}}.Encode(), http.StatusSeeOther)
	}
}

// doneNotice is what the ticket page says after an action (?done=).
func doneNotice(done string, v warp.TicketView) string {
	switch done {
	case "released":
		return fmt.Sprintf("Released: %s is %s again; its agent's loop is told the lease ended.", v.Ticket.ID, v.Ticket.State)
	case "cancelled":
		return fmt.Sprintf("Cancelled: %s is never claimed until it is reopened.", v.Ticket.ID)
	case "reopened":
		return fmt.Sprintf("Reopened: %s is open; the next claim gets epoch %d.", v.Ticket.ID, v.Ticket.Epoch+1)
	}
	return ""
}
