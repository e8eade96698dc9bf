package httpapi

import (
	"net/http"
	"time"

	"github.com/gyrum-labs/warp/internal/httpkit"
	"github.com/gyrum-labs/warp/internal/warp"
)

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
	limit, cursor, err := httpkit.PageParams(r.URL.Query())
	if err != nil {
		return err
	}
	hs, err := s.svc.Hosts(r.Context(), window)
	if err != nil {
		return err
	}
	all := FromHosts(window, hs)
	all.Hosts, all.NextCursor = httpkit.Page(all.Hosts, func(h Host) string { return h.Host }, cursor, limit)
	writeJSON(w, http.StatusOK, all)
	return nil
}
