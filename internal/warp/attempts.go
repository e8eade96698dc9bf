package warp

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/gyrum-labs/warp/internal/progress"
)

// Attempts (issue 45): every lease of a ticket is an attempt. Its lease
// row says who held it and how it ended; its attempt record (AttemptRecord,
// a row of its own so the heartbeat's hot columns stay as they are) keeps
// what the attempt got done: the verdict at its end in words, who ended
// it, the agent's last note and the snapshot of its worktree. The next
// claimant is handed the attempts (GET /v1/tickets/{id}, gyrum start-work).

// MaxNoteLen bounds an agent's note (gyrum note): 1 KiB.
const MaxNoteLen = 1024

// Snapshot states an attempt records (AttemptRecord.SnapshotState).
const (
	// SnapshotSaved: the worktree's state is a commit under Ref.
	SnapshotSaved = "saved"
	// SnapshotGone: the worktree was already gone: nothing to save.
	SnapshotGone = "gone"
	// SnapshotFailed: the snapshot could not be taken (Detail says why).
	SnapshotFailed = "failed"
)

// ValidSnapshotState reports whether s is a snapshot state a loop may report.
func ValidSnapshotState(s string) bool {
	return s == SnapshotSaved || s == SnapshotGone || s == SnapshotFailed
}

// AttemptRecord is what one attempt (the lease ticket/epoch) left beside
// its lease row. Zero fields were never recorded.
type AttemptRecord struct {
	Ticket string
	Epoch  int64

	// Note is the agent's last note (gyrum note), NoteAt when it wrote it.
	Note   string
	NoteAt time.Time

	// EndVerdict is the verdict of the lease when it ended, in words
	// (Policy.VerdictWords): "stalled 31m0s", "exited (parent-exited)".
	EndVerdict string
	// EndedBy is who ended the lease: the operator's name from the
	// dashboard, "agent" for an agent token, "warp" for the sweep or a
	// release on exit; empty when unknown (an API call without roles).
	EndedBy string

	// The snapshot of the attempt's worktree, recorded once: a later
	// report for the same attempt is refused (ErrConflict), so a lapsed
	// agent that kept working cannot replace what its loop saved.
	Snapshot Snapshot

	// CapReset marks the attempt after which an operator reopened the
	// blocked ticket: the attempt cap counts only the attempts after it.
	CapReset bool
}

// Snapshot is the state of an attempt's worktree as its loop saved it.
type Snapshot struct {
	State  string // SnapshotSaved, SnapshotGone, SnapshotFailed; "" none
	Commit string // the commit object (SnapshotSaved)
	Ref    string // refs/gyrum/<ticket>/<epoch>
	Base   string // the HEAD commit the worktree was at (the commit's parent)
	Branch string // the branch the worktree had checked out; "" detached
	Remote string // the repository's remote URL, "" none
	Pushed bool   // the ref was pushed to Remote
	Host   string // the host whose repository holds Ref
	Detail string // why it failed, or a remark
	At     time.Time
}

// Attempt is one lease of a ticket with its record.
type Attempt struct {
	Lease  Lease
	Record AttemptRecord
}

// Failed reports whether the attempt ended without completing.
func (a Attempt) Failed() bool {
	return a.Lease.State == LeaseReleased || a.Lease.State == LeaseLapsed
}

// MaxAttemptsListed bounds the attempts a ticket's view carries, newest
// first kept.
const MaxAttemptsListed = 100

var (
	snapshotCommitRE = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)
)

// ValidateSnapshot checks a snapshot a loop reports for lease (ticket,
// epoch). ErrInvalid for anything wrong.
func ValidateSnapshot(ticket string, epoch int64, s Snapshot) error {
	if !ValidTicketID(ticket) {
		return Errorf(ErrInvalid, "ticket id %q is invalid", ticket)
	}
	if epoch <= 0 {
		return Errorf(ErrInvalid, "epoch must be a positive integer, got %d", epoch)
	}
	if !ValidSnapshotState(s.State) {
		return Errorf(ErrInvalid, "snapshot state %q is unknown: want %s, %s or %s", s.State, SnapshotSaved, SnapshotGone, SnapshotFailed)
	}
	if s.State == SnapshotSaved {
		if !snapshotCommitRE.MatchString(s.Commit) {
			return Errorf(ErrInvalid, "commit %q is not a full lowercase hex object id", s.Commit)
		}
		if want := SnapshotRef(ticket, epoch); s.Ref != want {
			return Errorf(ErrInvalid, "ref %q: a snapshot of attempt %d is %s", s.Ref, epoch, want)
		}
	} else if s.Commit != "" || s.Ref != "" {
		return Errorf(ErrInvalid, "a %s snapshot carries no commit or ref", s.State)
	}
	if s.Base != "" && !snapshotCommitRE.MatchString(s.Base) {
		return Errorf(ErrInvalid, "base %q is not a full lowercase hex object id", s.Base)
	}
	return checkTexts(MaxTitleLen, "branch", s.Branch, "remote", s.Remote, "host", s.Host, "detail", s.Detail)
}

// SnapshotRef is the git ref of attempt epoch's snapshot of ticket.
func SnapshotRef(ticket string, epoch int64) string {
	return fmt.Sprintf("refs/gyrum/%s/%d", ticket, epoch)
}

// VerdictWords puts held lease l's verdict at now into words, as an
// attempt records it when the lease ends: "active", "stalled 31m0s" (no
// progress for that long), "silent 12m0s" (no heartbeat for that long),
// "unwired (the hook never fired)", "exited (parent-exited)". Other
// verdicts (issue 44's looping, spinning) join here.
func (p Policy) VerdictWords(l Lease, now time.Time) string {
	held := l
	held.State = LeaseHeld
	v := p.Verdict(held, now)
	switch v {
	case VerdictExited:
		return "exited (" + l.Exit + ")"
	case VerdictSilent:
		return "silent " + roundAge(now.Sub(l.LastHeartbeatAt))
	case VerdictStalled:
		return "stalled " + roundAge(now.Sub(ProgressAt(l)))
	case VerdictUnwired:
		return "unwired (the hook never fired)"
	case VerdictLooping:
		return progress.Words(l.Loop.Label, l.Loop.Count, l.Loop.Error)
	case VerdictSpinning:
		return "spinning: no progress for " + roundAge(now.Sub(l.LastProgressAt))
	}
	return string(v)
}

func roundAge(d time.Duration) string {
	if d >= time.Minute {
		return d.Round(time.Second).String()
	}
	return d.Round(time.Millisecond).String()
}

// endedBy names who ends a lease for the caller in ctx (AttemptRecord.EndedBy).
func endedBy(ctx context.Context) string {
	c, ok := CallerFrom(ctx)
	switch {
	case !ok:
		return "warp"
	case c.Operator != "":
		return c.Operator
	case c.Agent:
		return "agent"
	}
	return ""
}

// recordEnd records, for a change that ends a lease (Change.EndedFrom),
// the verdict in words and who ended it, and applies the attempt cap:
// a ticket that reopens after MaxAttempts attempts ended without
// completing is blocked instead, with the attempts as its reason.
func (s *Service) recordEnd(ctx context.Context, tx Tx, ch *Change, by string) error {
	if ch.EndedFrom == nil {
		return nil
	}
	held := *ch.EndedFrom
	at := ch.Lease.EndedAt
	if err := tx.SetAttemptEnd(ctx, held.Ticket, held.Epoch, s.cfg.Policy.VerdictWords(held, at), by); err != nil {
		return fmt.Errorf("record the end of attempt %s/%d: %w", held.Ticket, held.Epoch, err)
	}
	if s.cfg.MaxAttempts <= 0 || !ch.TicketDirty || ch.Ticket.State != TicketOpen || ch.Lease.State == LeaseCompleted {
		return nil
	}
	atts, err := tx.Attempts(ctx, held.Ticket, s.cfg.MaxAttempts+1)
	if err != nil {
		return fmt.Errorf("read the attempts of %s: %w", held.Ticket, err)
	}
	// The lease being ended is written already; Attempts reads it ended.
	n := FailedAttempts(atts)
	if n < s.cfg.MaxAttempts {
		return nil
	}
	ch.Ticket.State = TicketBlocked
	ch.Events = append(ch.Events, NewEvent(held.Ticket, held.Epoch, at, BlockedData{Attempts: n, MaxAttempts: s.cfg.MaxAttempts, Reason: AttemptsReason(atts, n)}))
	return nil
}

// FailedAttempts counts the attempts (newest first) that ended without
// completing since the last completion or cap reset.
func FailedAttempts(newestFirst []Attempt) int {
	n := 0
	for _, a := range newestFirst {
		if !a.Failed() {
			break
		}
		n++
		if a.Record.CapReset {
			return n - 1
		}
	}
	return n
}

// AttemptsReason is the blocked ticket's reason: its last n attempts, one
// clause each ("#3 lapsed no-activity, stalled 31m0s").
func AttemptsReason(newestFirst []Attempt, n int) string {
	parts := make([]string, 0, n)
	for i := n - 1; i >= 0 && i < len(newestFirst); i-- {
		a := newestFirst[i]
		p := fmt.Sprintf("#%d %s", a.Lease.Epoch, a.Lease.State)
		if a.Lease.EndReason != "" {
			p += " " + a.Lease.EndReason
		}
		if a.Record.EndVerdict != "" {
			p += ", " + a.Record.EndVerdict
		}
		parts = append(parts, p)
	}
	return fmt.Sprintf("%d attempts ended without completing: %s", n, strings.Join(parts, "; "))
}

// Attempts returns the attempts of ticket id, newest first, at most
// MaxAttemptsListed.
func (s *Service) Attempts(ctx context.Context, id string) ([]Attempt, error) {
	if !ValidTicketID(id) {
		return nil, Errorf(ErrInvalid, "ticket id %q is invalid", id)
	}
	var out []Attempt
	err := s.store.View(ctx, func(tx Tx) error {
		if _, err := readTicket(ctx, tx, id); err != nil {
			return err
		}
		var err error
		out, err = tx.Attempts(ctx, id, MaxAttemptsListed)
		return err
	})
	return out, err
}

// RecordSnapshot records the snapshot of attempt epoch of ticket id, as
// its loop (or gyrum release) reports it once the lease ended or is
// ending: the caller must be the one that held the lease (its secret or
// token; admins too), held or not. An attempt records one snapshot: a
// second report is ErrConflict, so a lapsed agent that kept working
// cannot replace what was saved when its lease ended. It returns the
// attempt as recorded.
func (s *Service) RecordSnapshot(ctx context.Context, id string, epoch int64, snap Snapshot) (Attempt, error) {
	if err := ValidateSnapshot(id, epoch, snap); err != nil {
		return Attempt{}, err
	}
	snap.At = s.now()
	var out Attempt
	err := s.store.Update(ctx, func(tx Tx) error {
		if _, err := readTicket(ctx, tx, id); err != nil {
			return err
		}
		l, err := tx.Lease(ctx, id, epoch)
		if errors.Is(err, ErrNotFound) {
			return Errorf(ErrNotFound, "ticket %s has no attempt %d", id, epoch)
		}
		if err != nil {
			return fmt.Errorf("read lease %s/%d: %w", id, epoch, err)
		}
		c, _ := CallerFrom(ctx)
		if err := c.authorize(l); err != nil {
			return err
		}
		err = tx.SetAttemptSnapshot(ctx, id, epoch, snap)
		if errors.Is(err, ErrConflict) {
			return Errorf(ErrConflict, "attempt %d of ticket %s has its snapshot already: a later one does not replace it", epoch, id)
		}
		if err != nil {
			return fmt.Errorf("record the snapshot of %s/%d: %w", id, epoch, err)
		}
		data := SnapshotData{State: snap.State, Commit: snap.Commit, Host: snap.Host}
		if _, err := tx.AppendEvent(ctx, NewEvent(id, epoch, snap.At, data)); err != nil {
			return fmt.Errorf("append snapshot event of %s: %w", id, err)
		}
		out.Lease = l
		out.Record, err = tx.AttemptRecord(ctx, id, epoch)
		return err
	})
	return out, err
}
