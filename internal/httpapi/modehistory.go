package httpapi

import (
	"net/http"
	"strconv"

	"github.com/gyrum-labs/warp/internal/warp"
)

// modeHistory answers GET /v1/mode/history?limit=N: the latest N mode
// changes (1 to warp.MaxListLimit, default warp.MaxListLimit).
func (s *Server) modeHistory(w http.ResponseWriter, r *http.Request) error {
	limit := 0
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > warp.MaxListLimit {
			return warp.Errorf(warp.ErrInvalid, "limit %q is invalid: want an integer from 1 to %d", v, warp.MaxListLimit)
		}
		limit = n
	}
	changes, err := s.svc.ModeHistory(r.Context(), limit)
	if err != nil {
		return err
	}
	out := ModeHistory{Changes: make([]ModeChange, len(changes))}
	for i, c := range changes {
		out.Changes[i] = ModeChange{ID: c.EventID, At: c.At, From: string(c.From), To: string(c.To), Forced: c.Forced}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
