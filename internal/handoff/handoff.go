// Package handoff puts a ticket's earlier attempts into words for whoever
// takes it next: the few lines gyrum start-work and warp ticket show print,
// and .gyrum/handoff.json, which start-work writes for the agent (issue 45).
package handoff

import (
	"fmt"
	"strings"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/shellquote"
)

// File is the name of the handoff file in a worktree's .gyrum/.
const File = gyrumdir.HandoffFile

// Handoff is .gyrum/handoff.json: the ticket's earlier attempts, newest
// first, as the claim answered them.
type Handoff struct {
	Ticket string `json:"ticket"`
	// Epoch is the lease this handoff was written for.
	Epoch    int64     `json:"epoch"`
	Attempts []Attempt `json:"attempts"`
	// Resumed is the snapshot commit the worktree was made from
	// (start-work --resume); empty when nothing of an old attempt was
	// applied.
	Resumed string `json:"resumed,omitempty"`
}

// Attempt is one earlier attempt in the handoff: the wire attempt, how it
// ended in words, and how to get its snapshot.
type Attempt struct {
	client.Attempt
	// Ended says how it ended: "lapsed (no-activity), stalled 31m0s".
	Ended string `json:"ended"`
	// Get is the shell command that brings its snapshot into a
	// repository ("" without a saved snapshot).
	Get string `json:"get,omitempty"`
}

// New returns the handoff of ticket t's claim for lease epoch: its attempts
// before epoch.
func New(t client.Ticket, epoch int64) Handoff {
	h := Handoff{Ticket: t.ID, Epoch: epoch, Attempts: []Attempt{}}
	for _, a := range t.Attempts {
		if a.Number >= epoch {
			continue
		}
		h.Attempts = append(h.Attempts, Attempt{Attempt: a, Ended: Ended(a), Get: Get(a)})
	}
	return h
}

// Ended puts how attempt a ended into words, with the verdict at its end:
// "released by agent (released by agent), active",
// "lapsed (no-activity), stalled 31m0s", "agent exited (parent-exited)".
func Ended(a client.Attempt) string {
	var s string
	switch a.State {
	case "held":
		return "still held"
	case "completed":
		s = "completed"
		if a.PRURL != "" {
			s += " (" + a.PRURL + ")"
		}
	case "released":
		s = "released"
		if a.EndedBy != "" {
			s += " by " + a.EndedBy
		}
		if a.EndReason != "" {
			s += " (" + a.EndReason + ")"
		}
	case "lapsed":
		s = "lapsed"
		if a.EndReason != "" {
			s += " (" + a.EndReason + ")"
		}
	default:
		s = a.State
	}
	if a.Exit != "" && a.State != "completed" {
		s = "agent exited (" + a.Exit + "), " + s
	}
	if a.EndVerdict != "" && a.State != "completed" {
		s += "; at its end: " + a.EndVerdict
	}
	return s
}

// Get is the shell command that writes a's snapshot over the files of a
// worktree (unstaged, as start-work --resume does): from the local
// repository on its host, else fetched from its remote when pushed.
func Get(a client.Attempt) string {
	s := a.Snapshot
	if s == nil || s.State != client.SnapshotSaved {
		return ""
	}
	if s.Pushed && s.Remote != "" {
		return fmt.Sprintf("git fetch %s %s:%s && git restore --source=%s --worktree -- .", shellquote.Quote(s.Remote), s.Ref, s.Ref, s.Commit)
	}
	return fmt.Sprintf("git restore --source=%s --worktree -- .   # on %s, in the repository of its worktree (%s)", s.Commit, s.Host, s.Ref)
}

// SnapshotWords says what the snapshot of a holds.
func SnapshotWords(a client.Attempt) string {
	s := a.Snapshot
	switch {
	case s == nil:
		return "none reported"
	case s.State == client.SnapshotSaved:
		w := fmt.Sprintf("commit %s (%s", short(s.Commit), s.Ref)
		if s.Branch != "" {
			w += ", from branch " + s.Branch
		}
		if s.Host != "" {
			w += ", on " + s.Host
		}
		if s.Pushed {
			w += ", pushed to " + s.Remote
		}
		return w + ")"
	case s.State == client.SnapshotGone:
		return "none: the worktree was already gone"
	}
	return "failed: " + s.Detail
}

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// Lines is the few lines that tell the next claimant about attempts
// (newest first), one attempt each plus its note, at most max attempts
// (0: all).
func Lines(attempts []Attempt, max int) []string {
	var out []string
	for i, a := range attempts {
		if max > 0 && i == max {
			out = append(out, fmt.Sprintf("… %d earlier attempts: warp ticket show", len(attempts)-max))
			break
		}
		out = append(out, fmt.Sprintf("#%d %s on %s: %s; snapshot %s", a.Number, a.Agent, a.Host, a.Ended, SnapshotWords(a.Attempt)))
		if a.Note != "" {
			out = append(out, "   note: "+oneLine(a.Note))
		}
		if a.Get != "" {
			out = append(out, "   get:  "+a.Get)
		}
	}
	return out
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
