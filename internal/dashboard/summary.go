package dashboard

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// DefaultSummaryTTL is how long the main page reuses its verdict counts.
const DefaultSummaryTTL = 2 * time.Second

// verdicts are the verdicts the summary counts, in display order.
var verdicts = [...]warp.Verdict{warp.VerdictActive, warp.VerdictStalled, warp.VerdictUnwired, warp.VerdictSilent, warp.VerdictExited}

// summaryCache holds the held-lease counts per verdict. Counting reads
// every held lease (one Tx.CountHeld per verdict), the one part of the main page
// whose cost grows with the fleet; every open page re-fetches itself on
// live updates, so the counts are shared for a short while (Config.SummaryTTL)
// instead of being recounted for each viewer and each refresh.
type summaryCache struct {
	ttl time.Duration // <= 0: never reused

	mu       sync.Mutex // held while counting, so concurrent pages count once
	valid    bool
	counted  time.Time // wall clock of the count, for the TTL
	serverAt time.Time // service clock the count was taken at
	counts   [len(verdicts)]int64
}

// get returns the counts at the service time now, reusing the last ones
// when they are younger than the TTL (on both clocks).
func (c *summaryCache) get(ctx context.Context, svc *warp.Service, now time.Time) ([len(verdicts)]int64, time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.valid && c.ttl > 0 && time.Since(c.counted) < c.ttl && now.Sub(c.serverAt) < c.ttl && !now.Before(c.serverAt) {
		return c.counts, c.serverAt, nil
	}
	var counts [len(verdicts)]int64
	err := svc.Store().View(ctx, func(tx warp.Tx) error {
		for i, v := range verdicts {
			n, err := tx.CountHeld(ctx, svc.Policy().Bounds(v, now))
			if err != nil {
				return fmt.Errorf("count %s leases: %w", v, err)
			}
			counts[i] = n
		}
		return nil
	})
	if err != nil {
		return counts, now, err
	}
	c.valid, c.counted, c.serverAt, c.counts = true, time.Now(), now, counts
	return counts, now, nil
}
