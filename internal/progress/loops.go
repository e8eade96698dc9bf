package progress

import (
	"cmp"
	"fmt"
	"strings"
)

// Call is one completed tool call as the hook fingerprints it: what was
// called (tool and canonical input), what came of it (exit status or
// error and a hash of the output), whether it failed, and a short label.
type Call struct {
	Call, Result [8]byte
	Failed       bool
	Label        string
	// Error says how a failed call failed (its error's first line or its
	// exit status); "" when it did not fail or labels are off.
	Error string
}

// Limits are the repetitions that make a loop.
type Limits struct {
	// Same is how many times in a row the same call with the same result
	// is a loop (default 4).
	Same int
	// SameFailure is how many times in a row the same call failing with
	// the same error is a loop (default 3).
	SameFailure int
	// Alternation is how many calls alternating between two calls, each
	// with an unchanged result, are a loop (default 6).
	Alternation int
}

// DefaultLimits are issue 44's: 4, 3 and 6, as the agent runtimes that
// detect loops in-process use (OpenHands 4 and 3, an A/B alternation over
// 6 steps; Gemini CLI 5; Cline and Roo Code 3).
var DefaultLimits = Limits{Same: 4, SameFailure: 3, Alternation: 6}

// Loop says what repeats.
type Loop struct {
	// Label is the repeated call's label ("A / B" for two alternating).
	Label string
	// Count is how many calls the repetition spans.
	Count int
	// Failing: the repeated call fails (with the same error each time).
	Failing bool
	// Alternating: two calls alternate.
	Alternating bool
	// Error is how the repeated call fails ("" when it does not, or
	// labels are off).
	Error string
}

// Detect looks at the latest calls (oldest first) and reports the loop
// they end in, if any. Only the end counts: a repetition that a different
// call or a changed result broke is over.
func Detect(calls []Call, lim Limits) (Loop, bool) {
	if lim.Same <= 0 {
		lim.Same = DefaultLimits.Same
	}
	if lim.SameFailure <= 0 {
		lim.SameFailure = DefaultLimits.SameFailure
	}
	if lim.Alternation <= 0 {
		lim.Alternation = DefaultLimits.Alternation
	}
	n := len(calls)
	if n == 0 {
		return Loop{}, false
	}
	last := calls[n-1]
	run := 1
	for i := n - 2; i >= 0 && calls[i].Call == last.Call && calls[i].Result == last.Result; i-- {
		run++
	}
	if last.Failed && run >= lim.SameFailure || run >= lim.Same {
		return Loop{Label: last.Label, Count: run, Failing: last.Failed, Error: last.Error}, true
	}
	// A, B, A, B, ...: two different calls, each with one result.
	if n >= lim.Alternation && last.Call != calls[n-2].Call {
		a, b := calls[n-2], last
		alt := 2
		for i := n - 3; i >= 0; i-- {
			want := a
			if (n-1-i)%2 == 0 {
				want = b
			}
			if calls[i].Call != want.Call || calls[i].Result != want.Result {
				break
			}
			alt++
		}
		if alt >= lim.Alternation {
			return Loop{Label: a.Label + " / " + b.Label, Count: alt, Failing: a.Failed || b.Failed, Alternating: true, Error: cmp.Or(b.Error, a.Error)}, true
		}
	}
	return Loop{}, false
}

// Words says a loop in words for the agent and the operator:
//
//	looping on `Bash: npm test` ×7: TypeError: x is not a function
//
// label is "" when labels are off ("the same tool call"), errText "" when
// the call does not fail or its error is unknown.
func Words(label string, count int, errText string) string {
	what := "the same tool call"
	if label != "" {
		what = "`" + strings.ReplaceAll(label, "`", "'") + "`"
	}
	s := fmt.Sprintf("looping on %s ×%d", what, count)
	if errText != "" {
		s += ": " + errText
	}
	return s
}

// Window is how many of the latest calls loop detection looks at: enough
// for the longest repetition the limits name, and a count past it.
const Window = 32
