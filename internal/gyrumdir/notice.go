package gyrumdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/ticketid"
)

// NoticeFile holds a LeaseEnded notice for the agent: the loop writes it
// when warp tells it the lease is over, the hook shows it to the agent on
// its next tool call and removes it.
const NoticeFile = "lease-ended.json"

// Ways a lease ends that the agent did not ask for.
const (
	EndLapsed    = "lapsed"     // the expiry job ended it
	EndReleased  = "released"   // an operator (or another tool) released it
	EndCompleted = "completed"  // completed by someone else
	EndTakenOver = "taken-over" // the ticket was claimed again after it ended
	EndUnknown   = "unknown"    // warp no longer knows the ticket
)

// LeaseEnded tells the agent that its lease ended without it asking.
type LeaseEnded struct {
	Ticket string    `json:"ticket"`
	Epoch  int64     `json:"epoch"`
	How    string    `json:"how"`              // one of the End* values
	Reason string    `json:"reason,omitempty"` // warp's reason (no-activity, ...), when known
	At     time.Time `json:"at"`               // when the loop learned it
}

// Message is what the agent is shown: which ticket, what happened and
// what to do about it.
func (n LeaseEnded) Message(worktree string) string {
	what := "has ended"
	switch n.How {
	case EndLapsed:
		what = "lapsed"
		if n.Reason != "" {
			what += " (" + n.Reason + ")"
		}
	case EndReleased:
		what = "was released"
		if n.Reason != "" {
			what += " (" + n.Reason + ")"
		}
	case EndCompleted:
		what = "was completed by someone else"
	case EndTakenOver:
		what = "ended, and the ticket has been claimed again by another holder"
	case EndUnknown:
		what = "is unknown to the warp server (the ticket no longer exists)"
	}
	// The worktree's path goes to the model as one shell word inside a
	// code span; a path with control characters (a line break could start
	// words of its own in the model's context) or a backquote (which would
	// end the span) is not written at all.
	release := "`gyrum release --dir " + shellquote.Quote(worktree) + "`"
	if !shellquote.Printable(worktree) || strings.Contains(worktree, "`") {
		release = "`gyrum release --dir DIR` (DIR: this ticket's worktree, whose path is not printable)"
	}
	return fmt.Sprintf("gyrum: your lease on ticket %s (epoch %d) %s; you no longer hold %s. "+
		"Stop working on %s now: do not commit, push or open a PR for it. "+
		"Run `gyrum status` to see your leases and %s to clean up the worktree; "+
		"claim the ticket again with `gyrum start-work %s` only if it is still open and the work is still wanted.",
		n.Ticket, n.Epoch, what, n.Ticket, n.Ticket, release, n.Ticket)
}

// WriteNotice writes the lease-ended notice atomically.
func (d Dir) WriteNotice(n LeaseEnded) error {
	n.Reason = CleanReason(n.Reason)
	if !n.valid() {
		return fmt.Errorf("write notice: %+v is not a notice gyrum writes", n)
	}
	data, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("encode notice: %w", err)
	}
	return WriteFileAtomic(d.file(NoticeFile), append(data, '\n'))
}

// ReadNotice reads the lease-ended notice. Missing wraps fs.ErrNotExist,
// unusable content ErrCorrupt.
func (d Dir) ReadNotice() (LeaseEnded, error) {
	p := d.file(NoticeFile)
	data, err := readSmall(p, 4096)
	if err != nil {
		return LeaseEnded{}, err
	}
	var n LeaseEnded
	if err := json.Unmarshal(data, &n); err != nil || !n.valid() {
		return LeaseEnded{}, fmt.Errorf("%w: %s: not a lease-ended notice", ErrCorrupt, p)
	}
	return n, nil
}

// valid reports a notice gyrum could have written: its text reaches the
// model, so a file a repository committed must not carry words of its own.
func (n LeaseEnded) valid() bool {
	switch n.How {
	case EndLapsed, EndReleased, EndCompleted, EndTakenOver, EndUnknown:
	default:
		return false
	}
	return ticketid.Valid(n.Ticket) && n.Epoch > 0 && n.Reason == CleanReason(n.Reason)
}

// maxReason bounds LeaseEnded.Reason.
const maxReason = 80

// CleanReason keeps what a notice may say of warp's end reason: letters,
// digits, space and . _ : , - (at most 80 bytes); anything else is dropped.
func CleanReason(s string) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < maxReason; i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(" ._:,-", c) >= 0 {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// TakeNotice returns the notice and removes it, so it is shown once. ok is
// false when there is none (or another hook took it first), and when it is
// not about the lease lease.json names: the loop writes a notice only while
// lease.json names that lease, so any other (one a repository committed,
// one left from an earlier lease) is not gyrum's word about this one, and
// is neither shown nor taken.
func (d Dir) TakeNotice() (n LeaseEnded, ok bool) {
	n, err := d.ReadNotice()
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			_ = os.Remove(d.file(NoticeFile)) // corrupt: nothing to show
		}
		return LeaseEnded{}, false
	}
	if l, err := d.ReadLease(); err != nil || l.Ticket != n.Ticket || l.Epoch != n.Epoch {
		return LeaseEnded{}, false
	}
	// Only the hook whose remove succeeds shows it: parallel tool calls
	// must not print it twice.
	if err := os.Remove(d.file(NoticeFile)); err != nil {
		return LeaseEnded{}, false
	}
	_ = d.MarkTold(time.Now()) // no hook asks warp about this lease again
	return n, true
}
