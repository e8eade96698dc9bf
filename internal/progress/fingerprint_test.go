package progress_test

import (
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/progress"
)

func completed(tool, input, response, errv string, failure bool) progress.Completed {
	c := progress.Completed{Tool: tool, Input: []byte(input), FailureEvent: failure}
	if response != "" {
		c.Response, c.HasResponse = []byte(response), true
	}
	if errv != "" {
		c.Error = []byte(errv)
	}
	return c
}

// Two runs of the same call fingerprint alike when only what changes
// between any two runs differs (descriptions, ids, timing, Codex's and
// Gemini CLI's volatile header lines); a different command, file or
// output does not.
func TestFingerprintSameAndDifferent(t *testing.T) {
	codex := func(chunk, wall, code, out string) string {
		return `"Chunk ID: ` + chunk + `\nWall time: ` + wall + ` seconds\nProcess exited with code ` + code + `\nOriginal token count: 12\nOutput:\n` + out + `"`
	}
	gemini := func(pgid, out string) string {
		return `{"llmContent":"Command: make\nOutput: ` + out + `\nExit Code: 2\nBackground PIDs: (none)\nProcess Group PGID: ` + pgid + `"}`
	}
	for _, c := range []struct {
		name             string
		a, b             progress.Completed
		sameCall, sameOK bool
	}{
		{"descriptions and key order differ",
			completed("Bash", `{"command":"npm test","description":"run tests"}`, `{"stdout":"ok"}`, "", false),
			completed("Bash", `{"description":"again","command":"npm test","timeout":5000}`, `{"stdout":"ok"}`, "", false), true, true},
		{"Codex's header differs",
			completed("Bash", `{"command":"go test"}`, codex("a1", "0.5", "1", "FAIL"), "", false),
			completed("Bash", `{"command":"go test"}`, codex("b2", "0.7", "1", "FAIL"), "", false), true, true},
		{"Gemini CLI's process group differs",
			completed("run_shell_command", `{"command":"make"}`, gemini("123", "err"), "", false),
			completed("run_shell_command", `{"command":"make"}`, gemini("456", "err"), "", false), true, true},
		{"Copilot CLI's shell id differs",
			completed("bash", `{"command":"npm test"}`, `"TypeError\n<shellId: 4 completed with exit code 1>"`, "", false),
			completed("bash", `{"command":"npm test"}`, `"TypeError\n<shellId: 5 completed with exit code 1>"`, "", false), true, true},
		{"Copilot CLI's exit status differs",
			completed("bash", `{"command":"npm test"}`, `"TypeError\n<shellId: 4 completed with exit code 1>"`, "", false),
			completed("bash", `{"command":"npm test"}`, `"TypeError\n<shellId: 5 completed with exit code 2>"`, "", false), true, false},
		{"the output differs",
			completed("Bash", `{"command":"gh pr checks"}`, `{"stdout":"pending 1"}`, "", false),
			completed("Bash", `{"command":"gh pr checks"}`, `{"stdout":"pending 2"}`, "", false), true, false},
		{"another file",
			completed("Read", `{"file_path":"/w/a.go"}`, `{"content":"x"}`, "", false),
			completed("Read", `{"file_path":"/w/b.go"}`, `{"content":"x"}`, "", false), false, true},
		{"another tool, same input",
			completed("Read", `{"file_path":"/w/a.go"}`, `"x"`, "", false),
			completed("Write", `{"file_path":"/w/a.go"}`, `"x"`, "", false), false, true},
		{"the error differs",
			completed("Bash", `{"command":"npm test"}`, "", `"Exit code 1\nTypeError a"`, true),
			completed("Bash", `{"command":"npm test"}`, "", `"Exit code 1\nTypeError b"`, true), true, false},
		{"an input too large to keep, by its hash",
			progress.Completed{Tool: "Write", InputHash: 7}, progress.Completed{Tool: "Write", InputHash: 7}, true, true},
		{"inputs too large to keep, different hashes",
			progress.Completed{Tool: "Write", InputHash: 7}, progress.Completed{Tool: "Write", InputHash: 8}, false, true},
	} {
		fa, fb := progress.Fingerprint(c.a, true), progress.Fingerprint(c.b, true)
		if got := fa.Call == fb.Call; got != c.sameCall {
			t.Errorf("%s: same call %v, want %v", c.name, got, c.sameCall)
		}
		if got := fa.Result == fb.Result; got != c.sameOK {
			t.Errorf("%s: same result %v, want %v", c.name, got, c.sameOK)
		}
	}
}

// Failure is the agent's failure event, an error, or an exit status
// that is not 0 in a field or a line of the output; the label names the
// tool and the command's first 80 characters, the error its first line.
func TestFingerprintFailureAndLabels(t *testing.T) {
	long := strings.Repeat("x", 100)
	for _, c := range []struct {
		name          string
		in            progress.Completed
		failed        bool
		label, errTxt string
	}{
		{"Claude Code's failure event", completed("Bash", `{"command":"npm test"}`, "", `"Exit code 1\nmore"`, true), true, "Bash: npm test", "Exit code 1"},
		{"Codex: exit code in the text", completed("Bash", `{"command":"go  vet\n ./..."}`, `"Process exited with code 2\nOutput:\nbad"`, "", false), true, "Bash: go vet ./...", "exit 2"},
		{"Codex: exit 0", completed("Bash", `{"command":"true"}`, `"Process exited with code 0\nOutput:\n"`, "", false), false, "Bash: true", ""},
		{"Gemini CLI: Exit Code line", completed("run_shell_command", `{"command":"make"}`, `{"llmContent":"Output: x\nExit Code: 2"}`, "", false), true, "run_shell_command: make", "exit 2"},
		{"Copilot CLI: its shell's last line", completed("bash", `{"command":"make"}`, `"bad\n<shellId: 3 completed with exit code 2>"`, "", false), true, "bash: make", "exit 2"},
		{"Copilot CLI: exit 0", completed("bash", `{"command":"make"}`, `"ok\n<shellId: 3 completed with exit code 0>"`, "", false), false, "bash: make", ""},
		{"an exit_code field", completed("shell", `{"cmd":["bash","-lc","make"]}`, `{"exit_code":3}`, "", false), true, "shell: bash -lc make", "exit 3"},
		{"an error field", completed("Edit", `{"file_path":"a"}`, `{"error":"old_string not found"}`, "", false), true, "Edit", "old_string not found"},
		{"a plain read", completed("Read", `{"file_path":"a"}`, `{"content":"Exit code 1"}`, "", false), false, "Read", ""},
		{"a long command", completed("Bash", `{"command":"`+long+`"}`, `{"stdout":""}`, "", false), false, "Bash: " + long[:80], ""},
	} {
		f := progress.Fingerprint(c.in, true)
		if f.Failed != c.failed || f.Label != c.label || f.Error != c.errTxt {
			t.Errorf("%s: failed %v label %q error %q, want %v %q %q", c.name, f.Failed, f.Label, f.Error, c.failed, c.label, c.errTxt)
		}
		if f := progress.Fingerprint(c.in, false); f.Label != "" || f.Error != "" {
			t.Errorf("%s, labels off: label %q error %q", c.name, f.Label, f.Error)
		}
	}
}

func TestWords(t *testing.T) {
	for _, c := range []struct {
		label  string
		count  int
		errTxt string
		want   string
	}{
		{"Bash: npm test", 7, "TypeError: x", "looping on `Bash: npm test` ×7: TypeError: x"},
		{"", 4, "", "looping on the same tool call ×4"},
		{"Bash: echo `x`", 4, "", "looping on `Bash: echo 'x'` ×4"},
	} {
		if got := progress.Words(c.label, c.count, c.errTxt); got != c.want {
			t.Errorf("Words(%q, %d, %q) = %q, want %q", c.label, c.count, c.errTxt, got, c.want)
		}
	}
}
