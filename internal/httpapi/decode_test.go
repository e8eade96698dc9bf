package httpapi_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/httpkit"
	"github.com/gyrum-labs/warp/internal/warp"
)

func TestDecodeHeartbeat(t *testing.T) {
	yes := true
	cases := []struct {
		name string
		body string
		want warp.Heartbeat
		err  error
	}{
		{"v1 as curl sends it", `{"ticket":"T-1"}`, warp.Heartbeat{SchemaVersion: 1, Ticket: "T-1"}, nil},
		{"v1 with host and agent", `{"ticket":"T-1","host":"h","agent":"O"}`, warp.Heartbeat{SchemaVersion: 1, Ticket: "T-1", Host: "h", Agent: "O"}, nil},
		{"v1 explicit", `{"schema_version":1,"ticket":"T-1"}`, warp.Heartbeat{SchemaVersion: 1, Ticket: "T-1"}, nil},
		{"null schema is v1", `{"schema_version":null,"ticket":"T-1"}`, warp.Heartbeat{SchemaVersion: 1, Ticket: "T-1"}, nil},
		{"v1 ignores v2 fields", `{"ticket":"T-1","epoch":4,"activity_age_s":-3,"exit":"nonsense"}`, warp.Heartbeat{SchemaVersion: 1, Ticket: "T-1"}, nil},
		{"v2", `{"schema_version":2,"ticket":"T-1","epoch":3,"host":"h","agent":"O","activity_age_s":42.5,"in_flight":"Bash"}`,
			warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 3, Host: "h", Agent: "O", ActivityAge: 42.5, InFlight: "Bash"}, nil},
		{"v2 exit report", `{"schema_version":2,"ticket":"T-1","epoch":3,"activity_age_s":0,"exit":"worktree-gone"}`,
			warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 3, Exit: "worktree-gone"}, nil},
		{"v2 hook fields", `{"schema_version":2,"ticket":"T-1","epoch":3,"activity_age_s":1,"hook_seen":true,"hook_events":4}`,
			warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 3, ActivityAge: 1, HookSeen: &yes, HookEvents: 4}, nil},
		{"unknown fields ignored", `{"ticket":"T-1","future":{"nested":[1,2]},"x":null}`, warp.Heartbeat{SchemaVersion: 1, Ticket: "T-1"}, nil},
		{"white space around", " \n\t{\"ticket\":\"T-1\"}\r\n ", warp.Heartbeat{SchemaVersion: 1, Ticket: "T-1"}, nil},
		{"schema 3", `{"schema_version":3,"ticket":"T-1"}`, warp.Heartbeat{}, warp.ErrUnsupportedSchema},
		{"v2 without epoch", `{"schema_version":2,"ticket":"T-1","activity_age_s":1}`, warp.Heartbeat{}, warp.ErrInvalid},
		{"v2 without age", `{"schema_version":2,"ticket":"T-1","epoch":1}`, warp.Heartbeat{}, warp.ErrInvalid},
		{"v2 negative hook events", `{"schema_version":2,"ticket":"T-1","epoch":1,"activity_age_s":1,"hook_events":-1}`, warp.Heartbeat{}, warp.ErrInvalid},
		{"NaN", `{"schema_version":2,"ticket":"T-1","epoch":1,"activity_age_s":NaN}`, warp.Heartbeat{}, warp.ErrInvalid},
		{"1e400", `{"schema_version":2,"ticket":"T-1","epoch":1,"activity_age_s":1e400}`, warp.Heartbeat{}, warp.ErrInvalid},
		{"empty", ``, warp.Heartbeat{}, warp.ErrInvalid},
		{"string", `"T-1"`, warp.Heartbeat{}, warp.ErrInvalid},
		{"too large", `{"ticket":"T-1","pad":"` + strings.Repeat("p", httpapi.MaxBodyBytes) + `"}`, warp.Heartbeat{}, httpkit.ErrBodyTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := httpapi.DecodeHeartbeat(strings.NewReader(c.body))
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("got %+v, %v; want error %v", got, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v", err)
			}
			if !sameHeartbeat(got, c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func sameHeartbeat(a, b warp.Heartbeat) bool {
	if (a.HookSeen == nil) != (b.HookSeen == nil) || (a.HookSeen != nil && *a.HookSeen != *b.HookSeen) {
		return false
	}
	a.HookSeen, b.HookSeen = nil, nil
	return a == b
}

// FuzzDecodeHeartbeat: the decoder never panics, never accepts a body over
// the limit, and whatever it accepts passes the domain's validation.
func FuzzDecodeHeartbeat(f *testing.F) {
	for _, s := range []string{
		`{"ticket":"T-1"}`,
		`{"schema_version":2,"ticket":"T-1","epoch":3,"host":"h","agent":"O","activity_age_s":42.5,"in_flight":"Bash"}`,
		`{"schema_version":2,"ticket":"T-1","epoch":3,"activity_age_s":0,"exit":"parent-exited"}`,
		`{"schema_version":2,"ticket":"T-1","epoch":1,"activity_age_s":1e400}`,
		`{"schema_version":2,"ticket":"T-1","epoch":1,"activity_age_s":-0}`,
		`{"schema_version":3}`, `null`, `[]`, `{"ticket":"T-1"} {}`, `{"ticket":"\u0000"}`, "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		h, err := httpapi.DecodeHeartbeat(strings.NewReader(string(body)))
		if err != nil {
			if !errors.Is(err, warp.ErrInvalid) && !errors.Is(err, warp.ErrUnsupportedSchema) && !errors.Is(err, httpkit.ErrBodyTooLarge) {
				t.Fatalf("error of no known kind: %v", err)
			}
			return
		}
		if len(body) > httpapi.MaxBodyBytes {
			t.Fatalf("accepted a %d byte body", len(body))
		}
		if err := warp.ValidateHeartbeat(h); err != nil {
			t.Fatalf("accepted %+v that fails validation: %v", h, err)
		}
		if math.IsNaN(h.ActivityAge) || h.ActivityAge < 0 {
			t.Fatalf("accepted age %v", h.ActivityAge)
		}
		if h.SchemaVersion == 1 && (h.Epoch != 0 || h.Exit != "" || h.ActivityAge != 0) {
			t.Fatalf("v1 heartbeat carries v2 fields: %+v", h)
		}
	})
}
