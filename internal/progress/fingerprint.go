package progress

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Completed is what the hook knows of a completed tool call: the raw JSON
// of its input and of its output (each nil when absent or too large to
// keep, then stood for by a hash of its raw bytes) and whether the agent
// reported it as failed. Nothing of it is kept past Fingerprint.
type Completed struct {
	Tool string
	// Input is tool_input's raw JSON; InputHash hashes it when Input is
	// nil (cut off at the hook's capture limit).
	Input     []byte
	InputHash uint64
	// Response is tool_response's (or tool_result's) raw JSON;
	// ResponseHash hashes it when Response is nil and HasResponse.
	Response     []byte
	ResponseHash uint64
	HasResponse  bool
	// Error is the payload's top-level error, raw (Claude Code's
	// PostToolUseFailure); nil when none.
	Error []byte
	// FailureEvent: the agent sent its failure event for the call.
	FailureEvent bool
}

// MaxLabel is how many characters of a shell command a label keeps.
const MaxLabel = 80

// volatileKeys are input and output fields that differ between two runs
// of the same call: an agent's description of it, its ids, its timing.
var volatileKeys = map[string]bool{
	"description": true, "justification": true, "timeout": true, "timeout_ms": true,
	"yield_time_ms": true, "max_output_tokens": true, "id": true, "call_id": true,
	"tool_use_id": true, "request_id": true, "timestamp": true, "duration_ms": true,
	"durationMs": true, "duration": true, "elapsed": true, "wall_time": true,
}

// volatileLine matches the lines of a tool's output that differ between
// two runs of the same command: Codex's header (chunk id, wall time,
// token count), Gemini CLI's process group and background pids.
var volatileLine = regexp.MustCompile(`(?m)^(Chunk ID|Wall time|Original token count|Process Group PGID|Background PIDs|Duration):.*$`)

// shellID matches GitHub Copilot CLI's shell id in the line that ends a
// shell call's output ("<shellId: 7 completed with exit code 1>"): one
// more with every call, so two runs of the same command never look alike
// unless it is dropped.
var shellID = regexp.MustCompile(`<shellId: \d+ `)

// exitLine finds an exit status in a tool's textual output: Codex's
// "Process exited with code N", Gemini CLI's "Exit Code: N", Claude Code's
// "Exit code N", Copilot CLI's "<shellId: I completed with exit code N>".
var exitLine = regexp.MustCompile(`(?mi)^(?:process exited with code|exit code:?|<shellId: \d+ completed with exit code)\s*(-?\d+)`)

// Fingerprint returns c's fingerprints: the call (tool and canonical
// input: keys sorted, volatile fields dropped), the result (failed or
// not, the error, and the canonical output with volatile lines and fields
// dropped) and, when labels is true, its label.
func Fingerprint(c Completed, labels bool) Call {
	var out Call
	h := sha256.New()
	h.Write([]byte(c.Tool))
	h.Write([]byte{0})
	var input any
	if c.Input != nil && decode(c.Input, &input) {
		h.Write(canonical(input))
	} else {
		binary.Write(h, binary.LittleEndian, c.InputHash)
	}
	copy(out.Call[:], h.Sum(nil))

	var response any
	decoded := c.Response != nil && decode(c.Response, &response)
	out.Failed = c.FailureEvent || failedError(c.Error) || decoded && failed(response)
	h.Reset()
	if out.Failed {
		h.Write([]byte{1})
	} else {
		h.Write([]byte{0})
	}
	var errv any
	if c.Error != nil && decode(c.Error, &errv) {
		h.Write(canonical(errv))
	}
	h.Write([]byte{0})
	switch {
	case decoded:
		h.Write(canonical(response))
	case c.HasResponse:
		binary.Write(h, binary.LittleEndian, c.ResponseHash)
	}
	copy(out.Result[:], h.Sum(nil))
	if labels {
		out.Label = Label(c.Tool, input)
		if out.Failed {
			out.Error = errorLabel(errv, response)
		}
	}
	return out
}

// errorLabel says in a few words how a failed call failed: the first line
// of its error (MaxLabel characters at most), else its exit status.
func errorLabel(errv, response any) string {
	line := func(s string) string {
		for l := range strings.SplitSeq(s, "\n") {
			if l = strings.Join(strings.Fields(l), " "); l != "" {
				if utf8.RuneCountInString(l) > MaxLabel {
					l = string([]rune(l)[:MaxLabel])
				}
				return l
			}
		}
		return ""
	}
	if s, ok := errv.(string); ok && line(s) != "" {
		return line(s)
	}
	if m, ok := response.(map[string]any); ok {
		if s, ok := m["error"].(string); ok && line(s) != "" {
			return line(s)
		}
		for _, k := range []string{"exit_code", "exitCode", "exit_status", "returncode"} {
			if n, ok := m[k].(json.Number); ok {
				return "exit " + n.String()
			}
		}
		for _, k := range []string{"llmContent", "output"} {
			if s, ok := m[k].(string); ok {
				response = s
				break
			}
		}
	}
	if s, ok := response.(string); ok {
		if m := exitLine.FindStringSubmatch(s); m != nil {
			return "exit " + m[1]
		}
	}
	return "failed"
}

// Label is a call's short label: the tool, and for a call whose input
// has a command (a shell tool's "command" or "cmd", a string or a list of
// words) its first MaxLabel characters on one line.
func Label(tool string, input any) string {
	m, _ := input.(map[string]any)
	var cmd string
	for _, k := range []string{"command", "cmd"} {
		switch v := m[k].(type) {
		case string:
			cmd = v
		case []any:
			var words []string
			for _, w := range v {
				if s, ok := w.(string); ok {
					words = append(words, s)
				}
			}
			cmd = strings.Join(words, " ")
		}
		if cmd != "" {
			break
		}
	}
	cmd = strings.Join(strings.Fields(cmd), " ")
	if cmd == "" {
		return tool
	}
	if utf8.RuneCountInString(cmd) > MaxLabel {
		cmd = string([]rune(cmd)[:MaxLabel])
	}
	return tool + ": " + cmd
}

func decode(raw []byte, v *any) bool {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	return d.Decode(v) == nil
}

// canonical writes v as JSON with sorted keys (encoding/json sorts map
// keys), volatile keys dropped and volatile lines of strings removed.
func canonical(v any) []byte {
	b, err := json.Marshal(strip(v))
	if err != nil {
		return nil
	}
	return b
}

func strip(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if volatileKeys[k] {
				delete(x, k)
				continue
			}
			x[k] = strip(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = strip(e)
		}
		return x
	case string:
		if strings.Contains(x, "<shellId: ") {
			x = shellID.ReplaceAllString(x, "<shellId: ")
		}
		if strings.Contains(x, ":") {
			return volatileLine.ReplaceAllString(x, "")
		}
		return x
	}
	return v
}

// failed reports whether a tool's output says it failed: a non-zero exit
// status (a field or a line of text), an error field, success false.
func failed(v any) bool {
	switch x := v.(type) {
	case string:
		return nonZeroExit(x)
	case map[string]any:
		for _, k := range []string{"exit_code", "exitCode", "exit_status", "returncode"} {
			if n, ok := x[k].(json.Number); ok && n.String() != "0" {
				return true
			}
		}
		for _, k := range []string{"is_error", "isError"} {
			if b, ok := x[k].(bool); ok && b {
				return true
			}
		}
		if b, ok := x["success"].(bool); ok && !b {
			return true
		}
		switch e := x["error"].(type) {
		case string:
			if e != "" {
				return true
			}
		case map[string]any:
			return true
		}
		for _, k := range []string{"llmContent", "output"} {
			if s, ok := x[k].(string); ok && nonZeroExit(s) {
				return true
			}
		}
	}
	return false
}

func nonZeroExit(s string) bool {
	m := exitLine.FindStringSubmatch(s)
	if m == nil {
		return false
	}
	n, err := strconv.Atoi(m[1])
	return err == nil && n != 0
}

// failedError reports whether a top-level error value says anything.
func failedError(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	switch string(raw) {
	case "", "null", `""`, "false", "{}":
		return false
	}
	return true
}
