package httpapi_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/httpapi"
)

// designExamples returns the heartbeat bodies of docs/DESIGN.md section 3,
// Heartbeats: the JSON block that starts with the v1 body.
func designExamples(t *testing.T) []any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "DESIGN.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "```json\n{\"ticket\":\"T-1\"")
	if start < 0 {
		t.Fatal("docs/DESIGN.md has no heartbeat examples block")
	}
	block := text[start+len("```json\n"):]
	block = block[:strings.Index(block, "```")]
	var out []any
	dec := json.NewDecoder(strings.NewReader(block))
	for {
		var v any
		if err := dec.Decode(&v); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("DESIGN.md heartbeat examples: %v", err)
		}
		out = append(out, v)
	}
}

func TestHeartbeatSchema(t *testing.T) {
	_, s := docSet(t)
	hb := s.docs["heartbeat.schema.json"].(map[string]any)
	examples := hb["examples"].([]any)
	if design := designExamples(t); !reflect.DeepEqual(examples, design) {
		t.Errorf("the schema's examples are not docs/DESIGN.md's:\n%v\n%v", examples, design)
	}
	names := []string{"v1 as curl -d sends it", "v2", "v2 stale report", "v2 exit report"}
	if len(examples) != len(names) {
		t.Fatalf("%d examples, want %d", len(examples), len(names))
	}
	for i, ex := range examples {
		if errs := s.validate("heartbeat.schema.json", ex); len(errs) > 0 {
			t.Errorf("example %s does not validate: %v", names[i], errs)
		}
	}

	// Each body is sent to a real server, on ticket T-1 whose lease 3 the
	// agent token holds (bound to the token, as an unmigrated loop's): the
	// schema and the server must agree on every one.
	v2 := func(more string) string {
		return `{"schema_version":2,"ticket":"T-1","epoch":3,"host":"h","agent":"O","activity_age_s":42.5` + more + `}`
	}
	bodies := []struct {
		name, body string
		valid      bool
	}{
		{"v1 curl", `{"ticket":"T-1"}`, true},
		{"v1 with schema_version", `{"schema_version":1,"ticket":"T-1","host":"h"}`, true},
		{"v1 ignores v2 fields", `{"ticket":"T-1","activity_age_s":-5,"exit":"crashed","epoch":99}`, true},
		{"v2 minimal", `{"schema_version":2,"ticket":"T-1","epoch":3,"activity_age_s":0}`, true},
		{"v2 age 366 days", v2(`,"activity_age_s":31622400`), true},
		{"v2 hook_events 2^20", v2(`,"hook_events":1048576`), true},
		{"v2 host 256 bytes", v2(`,"host":"` + strings.Repeat("h", 256) + `"`), true},
		{"v2 unknown field", v2(`,"future":{"x":1}`), true},
		{"v2 worktree-gone", v2(`,"exit":"worktree-gone"`), true},

		{"negative age", v2(`,"activity_age_s":-1`), false},
		{"unknown exit", v2(`,"exit":"crashed"`), false},
		{"schema_version 3", `{"schema_version":3,"ticket":"T-1","epoch":3,"activity_age_s":1}`, false},
		{"schema_version 0", `{"schema_version":0,"ticket":"T-1"}`, false},
		{"age over 366 days", v2(`,"activity_age_s":31622401`), false},
		{"v2 without epoch", `{"schema_version":2,"ticket":"T-1","activity_age_s":1}`, false},
		{"v2 epoch 0", `{"schema_version":2,"ticket":"T-1","epoch":0,"activity_age_s":1}`, false},
		{"v2 without age", `{"schema_version":2,"ticket":"T-1","epoch":3}`, false},
		{"hook_events < 0", v2(`,"hook_events":-1`), false},
		{"hook_events over 2^20", v2(`,"hook_events":1048577`), false},
		{"hook_seen a string", v2(`,"hook_seen":"yes"`), false},
		{"stale a string", v2(`,"stale":"true"`), false},
		{"host 257 bytes", v2(`,"host":"` + strings.Repeat("h", 257) + `"`), false},
		{"in_flight with NUL", v2(`,"in_flight":"Ba\u0000sh"`), false},
		{"bad ticket id", `{"ticket":"-T-1"}`, false},
		{"no ticket", `{"host":"h"}`, false},
		{"v1 epoch a string", `{"ticket":"T-1","epoch":"3"}`, false},
		{"not an object", `["T-1"]`, false},
	}
	e := newEnv(t, withTokens())
	e.create("T-1")
	for range 2 {
		e.claim("T-1", "h")
		e.mustStatus(e.json("POST", "/v1/tickets/T-1/release", adminToken, nil, nil), http.StatusOK)
	}
	if tk := e.claim("T-1", "h"); tk.Epoch != 3 {
		t.Fatalf("epoch %d, want 3", tk.Epoch)
	}
	for _, b := range bodies {
		var v any
		if err := json.Unmarshal([]byte(b.body), &v); err != nil {
			t.Fatalf("%s: %v", b.name, err)
		}
		errs := s.validate("heartbeat.schema.json", v)
		if (len(errs) == 0) != b.valid {
			t.Errorf("%s: the schema says valid=%v (%v), want %v", b.name, len(errs) == 0, errs, b.valid)
		}
		r := e.request("POST", "/v1/heartbeat", agentToken, "application/json", []byte(b.body))
		want, code := http.StatusOK, ""
		if !b.valid {
			want, code = http.StatusBadRequest, httpapi.CodeInvalid
			if strings.Contains(b.name, "schema_version") {
				code = httpapi.CodeUnsupportedSchema
			}
		}
		if r.status != want || r.errorCode() != code {
			t.Errorf("%s: the server answered %d %s, want %d %s: %s", b.name, r.status, r.errorCode(), want, code, r.body)
		}
	}
	// The examples themselves, to the server (the exit report last: it
	// stays an exit report).
	for i, ex := range examples {
		r := e.request("POST", "/heartbeat", agentToken, "application/x-www-form-urlencoded", []byte(js(ex)))
		if r.status != http.StatusOK {
			t.Errorf("example %s: %d %s", names[i], r.status, r.body)
		}
	}
}
