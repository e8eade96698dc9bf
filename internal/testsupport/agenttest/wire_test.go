package agenttest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The tests of the API shapes speak each wire format with a plain
// net/http client, as the agent CLIs do.

func post(t *testing.T, ctx context.Context, url string, body any) (*http.Response, error) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return http.DefaultClient.Do(req)
}

// postOK posts body to url and returns the answer's body, failing the
// test unless the status is 200 and the content type is ctype.
func postOK(t *testing.T, url string, body any, ctype string) []byte {
	t.Helper()
	resp, err := post(t, context.Background(), url, body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != ctype {
		t.Fatalf("POST %s: %d %s: %s", url, resp.StatusCode, resp.Header.Get("Content-Type"), data)
	}
	return data
}

// sseEvent is one server-sent event: its name ("" when it has none) and
// its data.
type sseEvent struct {
	Event, Data string
}

// readSSE parses a stream of server-sent events (lines ending in \n or
// \r\n); a line it does not know fails the test.
func readSSE(t *testing.T, data []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		switch {
		case line == "":
			if cur != (sseEvent{}) {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data = strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if cur != (sseEvent{}) {
		t.Fatalf("unterminated event %+v", cur)
	}
	return out
}

// decode unmarshals an event's data or fails the test.
func decode(t *testing.T, data string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(data), &v); err != nil {
		t.Fatalf("data is not a JSON object: %v: %s", err, data)
	}
	return v
}

// sameJSON reports whether a and b marshal alike.
func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// orHi returns list, or when it is empty the one message hi: the user's
// "hi" in the API's shape.
func orHi(list []any, hi any) []any {
	if len(list) == 0 {
		return []any{hi}
	}
	return list
}
