package hook_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/hook"
	"github.com/gyrum-labs/warp/internal/progress"
)

// What the hook's fingerprinting costs per completed call (issue 44;
// docs/BENCHMARKS.md): a PostToolUse of a shell call with 4 KiB of
// output, parsed keeping its material (ParseCall) and fingerprinted;
// against Parse alone, the difference is fingerprinting's cost.
//
//	go test ./internal/hook -run '^$' -bench 'PostToolUse'
func BenchmarkPostToolUseParse(b *testing.B) {
	in := postToolUse(4 << 10)
	for b.Loop() {
		if p := hook.Parse(strings.NewReader(in), hook.MaxInput); p.ToolUseID == "" {
			b.Fatal(p)
		}
	}
}

func BenchmarkPostToolUseFingerprint(b *testing.B) {
	in := postToolUse(4 << 10)
	for b.Loop() {
		p, c := hook.ParseCall(strings.NewReader(in), hook.MaxInput)
		if f := progress.Fingerprint(c, true); p.ToolUseID == "" || f.Label == "" {
			b.Fatal(p, f)
		}
	}
}

// BenchmarkRecordCall is a whole Post event of the hook with a call to
// record: markers, activity, the calls file's append and the tail read
// for a loop.
func BenchmarkRecordCall(b *testing.B) {
	d := worktree(&testing.T{})
	i := 0
	now := time.Now()
	for b.Loop() {
		i++
		pre, post := claudeCall(d.Worktree, fmt.Sprintf("toolu_%d", i), fmt.Sprintf("go test ./pkg%d", i%7), strings.Repeat("ok\n", 1000), "")
		if _, err := hook.Run(strings.NewReader(pre), hook.Options{Now: now}); err != nil {
			b.Fatal(err)
		}
		if _, err := hook.Run(strings.NewReader(post), hook.Options{Now: now}); err != nil {
			b.Fatal(err)
		}
	}
}

func postToolUse(outputBytes int) string {
	return `{"session_id":"abc","transcript_path":"/x.jsonl","cwd":"/w","hook_event_name":"PostToolUse","tool_name":"Bash",` +
		`"tool_input":{"command":"go test ./internal/... -run TestX -count=1","description":"run the tests","timeout":120000},` +
		`"tool_response":{"stdout":"` + strings.Repeat("ok  \\tpkg\\t0.1s\\n", outputBytes/16) + `","stderr":"","interrupted":false,"isImage":false},` +
		`"tool_use_id":"toolu_01ABC","duration_ms":1234}`
}
