package sim

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// watchdogTimeout bounds one `gyrum watchdog sweep` (it waits 5 s before a
// SIGKILL for each loop that ignores SIGTERM).
const watchdogTimeout = 30 * time.Second

// watchdogRun is one `gyrum watchdog sweep` of the run.
type watchdogRun struct {
	At    time.Time
	Final bool
	Err   string
}

// watchdogSchedule runs the watchdog every WatchdogEvery (scaled) until end,
// as the systemd timer or cron line of gyrum setup would. A sweep still
// running when the next is due makes that one skip. The schedule stops with
// schedCtx; a sweep already running ends with runCtx (the run itself), so
// the end of the scenario does not cut one short.
func (r *run) watchdogSchedule(schedCtx, runCtx context.Context, end time.Time) {
	for k := 1; ; k++ {
		next := r.at(time.Duration(k) * r.plan.WatchdogEvery)
		if !next.Before(end) || !sleepUntil(schedCtx, next) {
			return
		}
		if r.wdMu.TryLock() {
			go func() {
				defer r.wdMu.Unlock()
				r.watchdog(runCtx, false)
			}()
		}
	}
}

// watchdog runs one sweep with the run's GYRUM_HOME. The caller holds wdMu.
func (r *run) watchdog(ctx context.Context, final bool) {
	wctx, cancel := context.WithTimeout(ctx, watchdogTimeout)
	defer cancel()
	// The registry swept is the run's own (GYRUM_HOME); --within keeps the
	// /proc scan for unregistered loops inside the run's directory, so the
	// simulator never signals a loop it did not start.
	cmd := exec.CommandContext(wctx, r.cfg.Gyrum, "watchdog", "sweep", "--json", "--within", r.root)
	cmd.Dir = r.root
	cmd.Env = childEnv(r.markerEnv(), "GYRUM_HOME="+r.home, "WARP_URL="+r.url)
	at := time.Now()
	out, err := cmd.CombinedOutput()
	rec := watchdogRun{At: at, Final: final}
	if err != nil && ctx.Err() == nil {
		rec.Err = fmt.Sprintf("%v: %s", err, clip(strings.TrimSpace(string(out)), 300))
		r.log.Error("gyrum watchdog sweep failed", "err", rec.Err)
	}
	r.wdRuns = append(r.wdRuns, rec)
}

// finalWatchdog waits for a scheduled sweep to finish, then runs the last one.
func (r *run) finalWatchdog(ctx context.Context) {
	r.wdMu.Lock()
	defer r.wdMu.Unlock()
	r.watchdog(ctx, true)
}
