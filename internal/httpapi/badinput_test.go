package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/httpapi"
)

// TestBadInputCatalogue sends every kind of bad request through the real
// server and checks that each gets its specified status and error code and
// that the database is unchanged afterwards: tickets, leases, events, mode
// and adoption counts.
func TestBadInputCatalogue(t *testing.T) {
	e := newEnv(t, withTokens())
	e.create("T-1", "go")
	e.create("T-2")
	e.claim("T-1", "h1")
	// One v1 heartbeat so adoption has a v1 host (the activity-mode guard).
	e.mustStatus(e.request("POST", "/heartbeat", agentToken, "application/x-www-form-urlencoded", []byte(`{"ticket":"T-1"}`)), http.StatusOK)

	big := `{"ticket":"T-1","pad":"` + strings.Repeat("x", httpapi.MaxBodyBytes) + `"}`
	bigV2 := `{"schema_version":2,"ticket":"T-1","epoch":1,"activity_age_s":1,"in_flight":"` + strings.Repeat("y", httpapi.MaxBodyBytes) + `"}`
	const form = "application/x-www-form-urlencoded"
	cases := []struct {
		name, method, path, token, body string
		status                          int
		code                            string
		msg                             string // part of the message, when it matters
	}{
		// Malformed JSON.
		{"truncated object", "POST", "/v1/heartbeat", agentToken, `{"ticket":"T-1"`, 400, "invalid", "ends inside"},
		{"not JSON", "POST", "/v1/heartbeat", agentToken, `ticket=T-1`, 400, "invalid", "offset 0"},
		{"syntax error", "POST", "/v1/heartbeat", agentToken, `{"ticket":"T-1",}`, 400, "invalid", "offset"},
		{"array body", "POST", "/v1/heartbeat", agentToken, `[{"ticket":"T-1"}]`, 400, "invalid", "an array"},
		{"null body", "POST", "/v1/heartbeat", agentToken, `null`, 400, "invalid", "null"},
		{"empty body", "POST", "/heartbeat", agentToken, ``, 400, "invalid", "empty body"},
		{"trailing garbage", "POST", "/heartbeat", agentToken, `{"ticket":"T-1"} trailing`, 400, "invalid", "after the JSON object at offset 17"},
		{"two objects", "POST", "/heartbeat", agentToken, `{"ticket":"T-1"}{"ticket":"T-1"}`, 400, "invalid", "after the JSON object"},
		{"invalid UTF-8 framing", "POST", "/heartbeat", agentToken, "{\"ticket\":\"T-1\xff\"}", 400, "invalid", "ticket"},
		// Fields of the wrong type.
		{"ticket a number", "POST", "/heartbeat", agentToken, `{"ticket":5}`, 400, "invalid", `field "ticket"`},
		{"schema_version a string", "POST", "/heartbeat", agentToken, `{"schema_version":"2","ticket":"T-1"}`, 400, "invalid", `field "schema_version"`},
		{"schema_version a fraction", "POST", "/heartbeat", agentToken, `{"schema_version":2.5,"ticket":"T-1"}`, 400, "invalid", `field "schema_version"`},
		{"epoch a string", "POST", "/v1/heartbeat", agentToken, `{"schema_version":2,"ticket":"T-1","epoch":"1","activity_age_s":1}`, 400, "invalid", `field "epoch"`},
		{"epoch a fraction", "POST", "/v1/heartbeat", agentToken, `{"schema_version":2,"ticket":"T-1","epoch":1.5,"activity_age_s":1}`, 400, "invalid", `field "epoch"`},
		{"age a string", "POST", "/v1/heartbeat", agentToken, `{"schema_version":2,"ticket":"T-1","epoch":1,"activity_age_s":"42"}`, 400, "invalid", `field "activity_age_s"`},
		{"labels a string", "POST", "/v1/tickets", adminToken, `{"id":"T-9","labels":"go"}`, 400, "invalid", `field "labels"`},
		{"release epoch a string", "POST", "/v1/tickets/T-1/release", agentToken, `{"epoch":"1"}`, 400, "invalid", `field "epoch"`},
		{"force a string", "PUT", "/v1/mode", adminToken, `{"mode":"activity","force":"yes"}`, 400, "invalid", `field "force"`},
		// Unknown fields outside the heartbeat.
		{"unknown field on create", "POST", "/v1/tickets", adminToken, `{"id":"T-9","titel":"typo"}`, 400, "invalid", `unknown field "titel"`},
		{"unknown field on claim", "POST", "/v1/tickets/T-2/claim", agentToken, `{"agent":"O","epoch":3}`, 400, "invalid", `unknown field "epoch"`},
		{"unknown field on complete", "POST", "/v1/tickets/T-1/complete", agentToken, `{"epoch":1,"pr":"x"}`, 400, "invalid", `unknown field "pr"`},
		// Schema versions.
		{"schema_version 3", "POST", "/heartbeat", agentToken, `{"schema_version":3,"ticket":"T-1"}`, 400, "unsupported_schema_version", "3"},
		{"schema_version 0", "POST", "/heartbeat", agentToken, `{"schema_version":0,"ticket":"T-1"}`, 400, "unsupported_schema_version", ""},
		{"schema_version -1", "POST", "/v1/heartbeat", agentToken, `{"schema_version":-1,"ticket":"T-1"}`, 400, "unsupported_schema_version", ""},
		{"v2 without epoch", "POST", "/v1/heartbeat", agentToken, `{"schema_version":2,"ticket":"T-1","activity_age_s":1}`, 400, "invalid", "epoch is required"},
		{"v2 without age", "POST", "/v1/heartbeat", agentToken, `{"schema_version":2,"ticket":"T-1","epoch":1}`, 400, "invalid", "activity_age_s is required"},
		{"v2 unknown exit", "POST", "/v1/heartbeat", agentToken, `{"schema_version":2,"ticket":"T-1","epoch":1,"activity_age_s":1,"exit":"bored"}`, 400, "invalid", "exit"},
		// Ages.
		{"negative age", "POST", "/v1/heartbeat", agentToken, `{"schema_version":2,"ticket":"T-1","epoch":1,"activity_age_s":-1}`, 400, "invalid", "activity_age_s"},
		{"NaN age", "POST", "/v1/heartbeat", agentToken, `{"schema_version":2,"ticket":"T-1","epoch":1,"activity_age_s":NaN}`, 400, "invalid", "malformed JSON"},
		{"Infinity age", "POST", "/v1/heartbeat", agentToken, `{"schema_version":2,"ticket":"T-1","epoch":1,"activity_age_s":Infinity}`, 400, "invalid", "malformed JSON"},
		{"age 1e400", "POST", "/v1/heartbeat", agentToken, `{"schema_version":2,"ticket":"T-1","epoch":1,"activity_age_s":1e400}`, 400, "invalid", `field "activity_age_s"`},
		{"huge age", "POST", "/v1/heartbeat", agentToken, `{"schema_version":2,"ticket":"T-1","epoch":1,"activity_age_s":1e12}`, 400, "invalid", "larger than"},
		{"negative epoch", "POST", "/v1/heartbeat", agentToken, `{"schema_version":2,"ticket":"T-1","epoch":-1,"activity_age_s":1}`, 400, "invalid", "epoch"},
		{"epoch overflows", "POST", "/v1/heartbeat", agentToken, `{"schema_version":2,"ticket":"T-1","epoch":99999999999999999999,"activity_age_s":1}`, 400, "invalid", `field "epoch"`},
		// Ticket ids.
		{"path traversal id", "POST", "/heartbeat", agentToken, `{"ticket":"../etc/passwd"}`, 400, "invalid", "ticket"},
		{"id too long", "POST", "/heartbeat", agentToken, `{"ticket":"` + strings.Repeat("a", 65) + `"}`, 400, "invalid", "ticket"},
		{"id with space", "POST", "/heartbeat", agentToken, `{"ticket":"T 1"}`, 400, "invalid", "ticket"},
		{"missing ticket", "POST", "/heartbeat", agentToken, `{"host":"h1"}`, 400, "invalid", "ticket is required"},
		{"create bad id", "POST", "/v1/tickets", adminToken, `{"id":"-T"}`, 400, "invalid", "invalid"},
		{"create bad label", "POST", "/v1/tickets", adminToken, `{"id":"T-9","labels":["a b"]}`, 400, "invalid", "label"},
		{"claim bad id", "POST", "/v1/tickets/T%201/claim", agentToken, `{}`, 400, "invalid", "invalid"},
		{"get bad id", "GET", "/v1/tickets/T%21", adminToken, ``, 400, "invalid", "invalid"},
		{"events bad id", "GET", "/v1/tickets/T%21/events", adminToken, ``, 400, "invalid", "invalid"},
		// Query parameters.
		{"limit not a number", "GET", "/v1/tickets?limit=ten", adminToken, ``, 400, "invalid", "limit"},
		{"limit too large", "GET", "/v1/tickets?limit=100000", adminToken, ``, 400, "invalid", "limit"},
		{"unknown state", "GET", "/v1/tickets?state=done", adminToken, ``, 400, "invalid", "state"},
		{"unknown verdict", "GET", "/v1/tickets?verdict=sleepy", adminToken, ``, 400, "invalid", "verdict"},
		{"bad cursor", "GET", "/v1/tickets?cursor=abc", adminToken, ``, 400, "invalid", "cursor"},
		{"negative window", "GET", "/v1/adoption?window=-1h", adminToken, ``, 400, "invalid", "window"},
		{"window not a duration", "GET", "/v1/adoption?window=yesterday", adminToken, ``, 400, "invalid", "window"},
		{"hosts negative window", "GET", "/v1/hosts?window=-1h", adminToken, ``, 400, "invalid", "window"},
		{"hosts window not a duration", "GET", "/v1/hosts?window=yesterday", adminToken, ``, 400, "invalid", "window"},
		{"agent reads hosts", "GET", "/v1/hosts", agentToken, ``, 403, "forbidden", ""},
		{"unknown verdict lists unwired", "GET", "/v1/tickets?verdict=wired", adminToken, ``, 400, "invalid", "unwired"},
		{"unknown mode", "PUT", "/v1/mode", adminToken, `{"mode":"yolo"}`, 400, "invalid", "yolo"},
		// Oversized bodies.
		{"oversized heartbeat", "POST", "/heartbeat", agentToken, big, 413, "body_too_large", "65536"},
		{"oversized v2 heartbeat", "POST", "/v1/heartbeat", agentToken, bigV2, 413, "body_too_large", ""},
		{"oversized create", "POST", "/v1/tickets", adminToken, `{"title":"` + strings.Repeat("t", httpapi.MaxBodyBytes) + `"}`, 413, "body_too_large", ""},
		// State conflicts that must not write.
		{"unknown ticket", "POST", "/heartbeat", agentToken, `{"ticket":"NOPE"}`, 404, "not_found", "NOPE"},
		{"never claimed", "POST", "/heartbeat", agentToken, `{"ticket":"T-2"}`, 410, "lease_ended", "claim it first"},
		// To an agent, refusals name neither the holder nor the epoch.
		{"wrong epoch", "POST", "/v1/heartbeat", agentToken, `{"schema_version":2,"ticket":"T-1","epoch":7,"activity_age_s":1}`, 409, "stale_epoch", "has a newer lease"},
		{"claim a claimed ticket", "POST", "/v1/tickets/T-1/claim", agentToken, `{"agent":"U"}`, 409, "conflict", "held by another agent"},
		{"claim a claimed ticket (admin)", "POST", "/v1/tickets/T-1/claim", adminToken, `{"agent":"U"}`, 409, "conflict", "claimed by"},
		{"create twice", "POST", "/v1/tickets", adminToken, `{"id":"T-1"}`, 409, "conflict", "exists"},
		{"claim-next without match", "POST", "/v1/claims/next", agentToken, `{"labels":["rust"]}`, 404, "no_open_ticket", "rust"},
		{"activity while v1 hosts", "PUT", "/v1/mode", adminToken, `{"mode":"activity"}`, 409, "adoption_incomplete", "--force"},
		// Authentication and roles.
		{"no token", "POST", "/heartbeat", "", `{"ticket":"T-1"}`, 401, "unauthorized", "Bearer"},
		{"wrong token", "POST", "/heartbeat", "not-a-token", `{"ticket":"T-1"}`, 401, "unauthorized", "unknown token"},
		{"no token on list", "GET", "/v1/tickets", "", ``, 401, "unauthorized", ""},
		{"agent creates", "POST", "/v1/tickets", agentToken, `{"id":"T-9"}`, 403, "forbidden", "admin"},
		{"agent lists", "GET", "/v1/tickets", agentToken, ``, 403, "forbidden", "admin"},
		{"agent reads a ticket", "GET", "/v1/tickets/T-1", agentToken, ``, 403, "forbidden", ""},
		{"agent reads events", "GET", "/v1/tickets/T-1/events", agentToken, ``, 403, "forbidden", ""},
		{"agent reads adoption", "GET", "/v1/adoption", agentToken, ``, 403, "forbidden", ""},
		{"agent reads mode", "GET", "/v1/mode", agentToken, ``, 403, "forbidden", ""},
		{"agent sets mode", "PUT", "/v1/mode", agentToken, `{"mode":"legacy"}`, 403, "forbidden", ""},
		{"agent releases without epoch", "POST", "/v1/tickets/T-1/release", agentToken, `{"reason":"x"}`, 403, "forbidden", "epoch"},
		{"agent completes without epoch", "POST", "/v1/tickets/T-1/complete", agentToken, `{}`, 403, "forbidden", "epoch"},
		// Routing.
		{"unknown route", "POST", "/v2/heartbeat", agentToken, `{"ticket":"T-1"}`, 404, "not_found", "no route"},
		{"wrong method", "GET", "/heartbeat", agentToken, ``, 405, "method_not_allowed", "POST"},
	}
	// Move the clock so any write that slipped through would leave a new
	// timestamp behind, not only a new count.
	e.clock.Advance(time.Minute)
	before := e.snapshot()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body []byte
			if c.body != "" {
				body = []byte(c.body)
			} else if c.method != "GET" {
				body = []byte{}
			}
			ct := "application/json"
			if strings.Contains(c.path, "heartbeat") {
				ct = form // what curl -d sends
			}
			r := e.request(c.method, c.path, c.token, ct, body)
			if r.status != c.status || r.errorCode() != c.code {
				t.Fatalf("got %d %s, want %d %s", r.status, r.body, c.status, c.code)
			}
			if !strings.Contains(r.errorMessage(), c.msg) {
				t.Errorf("message %q does not mention %q", r.errorMessage(), c.msg)
			}
			if after := e.snapshot(); after != before {
				t.Fatalf("the database changed:\nbefore %s\nafter %s", before, after)
			}
		})
	}
}
