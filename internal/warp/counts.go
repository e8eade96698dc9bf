package warp

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Adoption counts written per flush. A group-commit batch used to write
// its heartbeats' adoption counts (heartbeat_counts, hosts) in its own
// transaction: measured on SQLite, a sixth of the batch's time and pages
// of every commit. Now a committed batch adds its counts to a buffer in
// memory, summed per (host, token, schema version, minute), and
// FlushCounts writes the buffer in one transaction: every flush interval
// (DefaultCountFlush, the group commit's timer in internal/groupcommit),
// at once when it holds maxPendingCounts rows, and at Close.
//
// What a reader sees: this process flushes before it answers from the
// counts (Adoption, Hosts, SetMode's adoption check), so on one node the
// answer is exact. Another PostgreSQL replica's last second of counts
// shows up at its next flush. A crash (kill -9) loses the counts not yet
// flushed — at most a flush interval of adoption statistics; never a
// lease's heartbeat, which commits before it is answered as before. The
// heartbeats applied without a group commit, and the first heartbeat of
// a host an agent token's bound admitted, still count in their
// transaction.

// DefaultCountFlush is how often a group commit flushes the counts.
const DefaultCountFlush = time.Second

// maxPendingCounts is how many summed rows the buffer holds before it is
// flushed without waiting for the interval.
const maxPendingCounts = 4096

// maxKeptCounts bounds what failed flushes keep for the next one: past
// it, a failed flush's counts are dropped (and logged), so a database
// that takes heartbeats but refuses the adoption rows cannot grow the
// buffer without end. A variable for tests.
var maxKeptCounts = 64 * maxPendingCounts

type countKey struct {
	host, token string
	schema      int
	bucket      int64
}

// countBuffer holds the adoption counts of committed batches until the
// next flush.
type countBuffer struct {
	mu sync.Mutex
	at map[countKey]int
	cs []HeartbeatCount
	// flushing serialises flushes, so a flush that failed and put its
	// counts back cannot race one that took newer counts. It is a channel
	// so that a reader waiting behind a flush the database does not
	// answer gives up with its own context.
	flushing chan struct{}
}

func newCountBuffer() *countBuffer {
	return &countBuffer{at: map[countKey]int{}, flushing: make(chan struct{}, 1)}
}

// add sums cs into the buffer: N added, At the latest of the two.
func (c *countBuffer) add(cs []HeartbeatCount) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, x := range cs {
		k := countKey{x.Host, x.Token, x.SchemaVersion, floorTo(x.At.Unix(), MinuteSpan)}
		if i, ok := c.at[k]; ok {
			c.cs[i].N = addSaturating(c.cs[i].N, x.N)
			if x.At.After(c.cs[i].At) {
				c.cs[i].At = x.At
			}
			continue
		}
		c.at[k] = len(c.cs)
		c.cs = append(c.cs, x)
	}
}

// take empties the buffer and returns what it held.
func (c *countBuffer) take() []HeartbeatCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs := c.cs
	c.cs = nil
	clear(c.at)
	return cs
}

// pending reports how many summed rows wait for a flush.
func (c *countBuffer) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cs)
}

// sortCounts puts cs in the lock order of every write transaction's
// adoption rows: host, schema version, token (then bucket).
func sortCounts(cs []HeartbeatCount) {
	sort.Slice(cs, func(a, b int) bool {
		x, y := cs[a], cs[b]
		if x.Host != y.Host {
			return x.Host < y.Host
		}
		if x.SchemaVersion != y.SchemaVersion {
			return x.SchemaVersion < y.SchemaVersion
		}
		if x.Token != y.Token {
			return x.Token < y.Token
		}
		return x.At.Before(y.At)
	})
}

// FlushCounts writes the adoption counts buffered by the group commit in
// one transaction. Readers of the counts in this package call it first;
// a failed flush keeps the counts for the next one.
func (s *Service) FlushCounts(ctx context.Context) error {
	c := s.counts
	select {
	case c.flushing <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("wait for the flush under way: %w", ctx.Err())
	}
	defer func() { <-c.flushing }()
	cs := c.take()
	if len(cs) == 0 {
		return nil
	}
	sortCounts(cs)
	err := s.store.Update(ctx, func(tx Tx) error { return tx.WriteBatch(ctx, nil, cs) })
	if err != nil {
		if n := c.pending(); n+len(cs) > maxKeptCounts {
			s.log.Error("write adoption counts: dropped, too many kept from failed flushes", "err", err, "rows", len(cs), "kept", n)
			return err
		}
		c.add(cs)
		return err
	}
	return nil
}
