package warp

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Adoption counts written per flush. A group-commit batch used to write
// its heartbeats' adoption counts (heartbeat_counts, hosts) in its own
// transaction: measured on SQLite, a sixth of the batch's time and pages
// of every commit. Now a committed batch adds its counts to a buffer in
// memory, summed per (host, token, schema version, minute),
// and one transaction writes the buffer a flush interval after it turned
// non-empty (Config.CountFlush, default 1 s), or at once when it holds
// maxPendingCounts rows, and at Close.
//
// What a reader sees: this process flushes before it answers from the
// counts (Adoption, Hosts, SetMode's adoption check), so on one node the
// answer is exact. Another PostgreSQL replica's last second of counts
// shows up at its next flush. A crash (kill -9) loses the counts not yet
// flushed — at most a flush interval of adoption statistics; never a
// lease's heartbeat, which commits before it is answered as before. The
// heartbeats that write their own transaction (NoGroupCommit, an agent
// token naming a new host) still count in it.

// DefaultCountFlush is Config.CountFlush's default.
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
	// ready receives a value when the buffer turns non-empty, full when
	// it reaches maxPendingCounts rows (both hold one value at most).
	ready, full chan struct{}
	// flushing serialises flushes, so a flush that failed and put its
	// counts back cannot race one that took newer counts.
	flushing sync.Mutex
}

func newCountBuffer() *countBuffer {
	return &countBuffer{at: map[countKey]int{}, ready: make(chan struct{}, 1), full: make(chan struct{}, 1)}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// add sums cs into the buffer: N added, At the latest of the two.
func (c *countBuffer) add(cs []HeartbeatCount) {
	c.mu.Lock()
	defer c.mu.Unlock()
	was := len(c.cs)
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
	if was == 0 && len(c.cs) > 0 {
		signal(c.ready)
	}
	if len(c.cs) >= maxPendingCounts {
		signal(c.full)
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
	if s.batch == nil {
		return nil
	}
	c := s.batch.counts
	c.flushing.Lock()
	defer c.flushing.Unlock()
	cs := c.take()
	if len(cs) == 0 {
		return nil
	}
	sortCounts(cs)
	err := s.store.Update(ctx, func(tx Tx) error {
		if bulk, ok := tx.(HeartbeatBatchTx); ok {
			return bulk.WriteBatch(ctx, nil, cs)
		}
		for _, x := range cs {
			if _, err := tx.RecordHeartbeat(ctx, x); err != nil {
				return err
			}
		}
		return nil
	})
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

// flushCounts runs beside the batch workers until quit: a flush interval
// after the buffer turns non-empty, or at once when it is full.
func (s *Service) flushCounts(quit <-chan struct{}) {
	b := s.batch
	var wait *time.Timer
	for {
		now := false
		select {
		case <-quit:
			return
		case <-b.counts.ready:
		case <-b.counts.full:
			now = true
		}
		if !now {
			if wait == nil {
				wait = time.NewTimer(b.countFlush)
			} else {
				wait.Reset(b.countFlush)
			}
			select {
			case <-quit:
				wait.Stop()
				return
			case <-wait.C:
			case <-b.counts.full:
				wait.Stop()
			}
		}
		if err := s.FlushCounts(context.Background()); err != nil {
			s.log.Warn("write adoption counts: kept for the next flush", "err", err, "rows", b.counts.pending())
			signal(b.counts.ready) // try again an interval later
		}
	}
}
