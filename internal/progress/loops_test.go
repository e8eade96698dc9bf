package progress_test

import (
	"testing"

	"github.com/gyrum-labs/warp/internal/progress"
)

// call builds a Call: name and result name its fingerprints.
func call(name, result string, failed bool) progress.Call {
	var c progress.Call
	copy(c.Call[:], name)
	copy(c.Result[:], result)
	c.Failed, c.Label = failed, name
	return c
}

func TestDetect(t *testing.T) {
	test := call("npm test", "FAIL x", true)
	same := call("cat a.go", "same", false)
	poll := func(i int) progress.Call { return call("gh pr checks", string(rune('a'+i)), false) }
	read := func(i int) progress.Call { return call("read "+string(rune('a'+i)), "ok", false) }
	edit := func(i int) progress.Call { return call("edit", string(rune('a'+i)), false) }
	for _, c := range []struct {
		name  string
		calls []progress.Call
		want  progress.Loop
		loop  bool
	}{
		{"nothing", nil, progress.Loop{}, false},
		{"the same failing command 3 times", []progress.Call{test, test, test}, progress.Loop{Label: "npm test", Count: 3, Failing: true}, true},
		{"the same failing command twice", []progress.Call{test, test}, progress.Loop{}, false},
		{"the same call, same result, 4 times", []progress.Call{same, same, same, same}, progress.Loop{Label: "cat a.go", Count: 4}, true},
		{"the same call, same result, 3 times", []progress.Call{same, same, same}, progress.Loop{}, false},
		{"polling whose result changes", []progress.Call{poll(0), poll(1), poll(2), poll(3), poll(4), poll(5), poll(6)}, progress.Loop{}, false},
		{"reads of different files", []progress.Call{read(0), read(1), read(2), read(3), read(4), read(5), read(6), read(7)}, progress.Loop{}, false},
		{"edit-then-test with different edits", []progress.Call{edit(0), test, edit(1), test, edit(2), test}, progress.Loop{}, false},
		{"the same edit and the same failure, alternating over 6", []progress.Call{edit(0), test, edit(0), test, edit(0), test},
			progress.Loop{Label: "edit / npm test", Count: 6, Failing: true, Alternating: true}, true},
		{"an alternation over 5", []progress.Call{test, edit(0), test, edit(0), test}, progress.Loop{}, false},
		{"a loop broken by a different call is over", []progress.Call{test, test, test, read(0)}, progress.Loop{}, false},
		{"a loop broken by a changed result is over", []progress.Call{test, test, test, call("npm test", "ok", false)}, progress.Loop{}, false},
	} {
		got, loop := progress.Detect(c.calls, progress.DefaultLimits)
		if loop != c.loop || got != c.want {
			t.Errorf("%s: %+v %v, want %+v %v", c.name, got, loop, c.want, c.loop)
		}
	}
}
