package expiry

import (
	"context"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// recordVerdicts runs the verdict pass (warp.Service.VerdictPass: verdict
// changes and host alarms) after a successful sweep and adds its changes
// and duration to res. A failing
// pass is logged and retried on the next tick; it does not undo the sweep,
// so res is still reported.
func (j *Job) recordVerdicts(ctx context.Context, res warp.SweepResult) warp.SweepResult {
	start := time.Now()
	pass, err := j.svc.VerdictPass(ctx)
	res.Duration += time.Since(start)
	res.VerdictChanges, res.HostAlarms = pass.Changes, pass.Alarms
	for _, c := range pass.Changes {
		j.cfg.Logger.Info("verdict changed", "ticket", c.Ticket, "epoch", c.Epoch, "from", c.From, "to", c.To,
			"since", c.Since, "agent", c.Agent, "host", c.Host)
	}
	for _, a := range pass.Alarms {
		if a.Raised {
			j.cfg.Logger.Warn(warp.AlarmMessage(a.Host)+": most of its leases went stale together; run `gyrum doctor` there",
				"host", a.Host, "leases", a.Leases, "stale", a.Stale)
		} else {
			j.cfg.Logger.Info("host alarm cleared", "host", a.Host, "reason", a.Reason, "since", a.Since)
		}
	}
	if err != nil && ctx.Err() == nil {
		j.cfg.Logger.Error("verdict pass failed; retrying next tick", "err", err, "recorded", len(pass.Changes))
	}
	return res
}
