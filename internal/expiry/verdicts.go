package expiry

import (
	"context"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// recordVerdicts runs the verdict pass (warp.Service.RecordVerdicts) after
// a successful sweep and adds its changes and duration to res. A failing
// pass is logged and retried on the next tick; it does not undo the sweep,
// so res is still reported.
func (j *Job) recordVerdicts(ctx context.Context, res warp.SweepResult) warp.SweepResult {
	start := time.Now()
	changes, err := j.svc.RecordVerdicts(ctx)
	res.Duration += time.Since(start)
	res.VerdictChanges = changes
	for _, c := range changes {
		j.cfg.Logger.Info("verdict changed", "ticket", c.Ticket, "epoch", c.Epoch, "from", c.From, "to", c.To,
			"since", c.Since, "agent", c.Agent, "host", c.Host)
	}
	if err != nil && ctx.Err() == nil {
		j.cfg.Logger.Error("verdict pass failed; retrying next tick", "err", err, "recorded", len(changes))
	}
	return res
}
