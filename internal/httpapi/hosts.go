package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// HostAlarm is a raised host alarm on the wire: most of the host's leases
// turned stalled or unwired within one stall window.
type HostAlarm struct {
	Since   time.Time `json:"since"`
	Message string    `json:"message"` // "activity hook likely broken on H"
	Fix     string    `json:"fix"`     // "run `gyrum doctor` on host H"
	Leases  int       `json:"leases"`  // held leases when raised
	Stale   int       `json:"stale"`   // of which stale
	EventID int64     `json:"event_id"`
}

// HostHook counts a host's held leases by what their loops report about
// the activity hook.
type HostHook struct {
	Seen    int `json:"seen"`
	NotSeen int `json:"not_seen"`
	Unknown int `json:"unknown"` // loops from before hook reporting
}

// Host is one host of GET /v1/hosts.
type Host struct {
	Host     string         `json:"host"`
	Leases   int            `json:"leases"`   // held leases
	Verdicts map[string]int `json:"verdicts"` // held leases by verdict, every verdict present
	Hook     HostHook       `json:"hook"`
	// Adoption is the host's line of the adoption query; null when it sent
	// no heartbeat within the window.
	Adoption *HostAdoption `json:"adoption"`
	// Alarm is the raised host alarm; null when none.
	Alarm *HostAlarm `json:"alarm"`
}

// HostList is the answer of GET /v1/hosts?window=24h.
type HostList struct {
	Window string `json:"window"`
	Hosts  []Host `json:"hosts"`
	Alarms int    `json:"alarms"` // hosts in alarm
}

// FromHosts converts the domain hosts overview to the wire form.
func FromHosts(window time.Duration, hs []warp.HostStatus) HostList {
	out := HostList{Window: window.String(), Hosts: make([]Host, len(hs))}
	for i, h := range hs {
		w := Host{Host: h.Host, Leases: h.Leases, Verdicts: map[string]int{},
			Hook: HostHook{Seen: h.HookSeen[warp.HookYes], NotSeen: h.HookSeen[warp.HookNo], Unknown: h.HookSeen[warp.HookUnknown]}}
		for _, v := range warp.Verdicts() {
			w.Verdicts[string(v)] = h.Verdicts[v]
		}
		if a := h.Adoption; a != nil {
			w.Adoption = &HostAdoption{Host: a.Host, LastSchemaVersion: a.LastSchemaVersion, LastSeen: a.LastSeen, V1Count: a.V1Count, V2Count: a.V2Count}
		}
		if al := h.Alarm; al != nil {
			w.Alarm = &HostAlarm{Since: al.Since, Message: warp.AlarmMessage(h.Host), Fix: warp.UnwiredFix(h.Host),
				Leases: al.Leases, Stale: al.Stale, EventID: al.EventID}
			out.Alarms++
		}
		out.Hosts[i] = w
	}
	return out
}

func (s *Server) hosts(w http.ResponseWriter, r *http.Request) error {
	window := warp.DefaultAdoptionWindow
	if v := r.URL.Query().Get("window"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return warp.Errorf(warp.ErrInvalid, "window %q is invalid: want a positive Go duration like 24h", v)
		}
		window = d
	}
	hs, err := s.svc.Hosts(r.Context(), window)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, FromHosts(window, hs))
	return nil
}

// Hosts returns every host with its leases by verdict, hook health,
// adoption over window (0: server default) and alarm.
func (c *Client) Hosts(ctx context.Context, window time.Duration) (HostList, error) {
	path := "/v1/hosts"
	if window > 0 {
		path += "?window=" + url.QueryEscape(window.String())
	}
	var l HostList
	err := c.Do(ctx, http.MethodGet, path, nil, &l)
	return l, err
}
