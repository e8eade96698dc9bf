package dashboard

import (
	"context"
	"sync"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// DefaultSummaryTTL is how long the main page reuses its verdict counts.
const DefaultSummaryTTL = 2 * time.Second

// verdicts are the verdicts the summary shows, in display order.
var verdicts = [...]warp.Verdict{warp.VerdictActive, warp.VerdictLooping, warp.VerdictSpinning, warp.VerdictStalled, warp.VerdictUnwired, warp.VerdictSilent, warp.VerdictExited}

// summaryCache holds the held-lease counts per verdict. Counting reads
// every held lease (one count per verdict), the one part of the main page
// whose cost grows with the fleet; every open page re-fetches itself on
// live updates, so the counts are shared for a short while (Config.SummaryTTL)
// instead of being recounted for each viewer and each refresh. Their age
// is measured on the service clock, the one the counts were taken at.
type summaryCache struct {
	ttl   time.Duration // <= 0: never reused
	count func(context.Context) (warp.VerdictCounts, error)
	now   func() time.Time // the service clock

	mu     sync.Mutex // held while counting, so concurrent pages count once
	valid  bool
	counts warp.VerdictCounts
}

// get returns the counts, reusing the last ones while they are younger
// than the TTL. A clock that went back behind them counts again.
func (c *summaryCache) get(ctx context.Context) (warp.VerdictCounts, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.valid && c.ttl > 0 {
		if age := c.now().Sub(c.counts.At); age >= 0 && age < c.ttl {
			return c.counts, nil
		}
	}
	counts, err := c.count(ctx)
	if err != nil {
		return counts, err
	}
	c.valid, c.counts = true, counts
	return counts, nil
}
