// Package groupcommit runs warp's heartbeat group commit: heartbeats that
// arrive while a transaction runs queue up, and the next transaction
// applies all of them (warp.Service.ApplyHeartbeats: one BEGIN, one read
// of their leases, one write, one commit for the batch); a timer writes
// the batches' adoption counts (warp.Service.FlushCounts). The rules live
// in internal/warp; this package holds only the goroutines, and whoever
// composes the Service (warp serve, tests) starts and closes it:
//
//	svc, _ := warp.NewService(store, cfg)
//	gc := groupcommit.Start(svc, groupcommit.Config{Workers: groupcommit.Writers(store)})
//	svc.UseGroupCommit(gc)
//	defer gc.Close()
//
// Group commit earns its place: with one transaction per heartbeat, a
// fleet of a million agents at the default 240 s interval (4,200
// heartbeats a second) was not held on SQLite (2.9k answered a second,
// p99 8 s).
package groupcommit

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// Lingering. A batch that finds only what was queued while the previous
// transaction ran stays small when the transaction is short: measured on
// SQLite with 64 clients, batches averaged 3.4 heartbeats and a third of
// the whole process's CPU went to per-transaction work. So once
// heartbeats are seen arriving together (the batch found others queued,
// or the previous one held several), a worker waits Config.Linger for
// more before it begins; meanwhile the CPU goes to the HTTP work that
// brings them. A heartbeat arriving alone, after a batch of one, is not
// kept waiting.

// DefaultLinger is Config.Linger's default: on SQLite with 64 clients,
// 250 µs to 1 ms all gave 15-25 % more heartbeats a second than no wait,
// 400 µs the most.
const DefaultLinger = 400 * time.Microsecond

// Config configures a Committer. Zero fields take the defaults.
type Config struct {
	// Workers is how many batches are applied at once (Writers); 1 when
	// 0.
	Workers int
	// Linger is how long a worker waits for more heartbeats once they are
	// seen arriving together; DefaultLinger when 0, no wait when
	// negative.
	Linger time.Duration
	// CountFlush is how often the buffered adoption counts are written;
	// warp.DefaultCountFlush when 0.
	CountFlush time.Duration
	// Logger receives failed flushes; discarded when nil.
	Logger *slog.Logger
}

// Writers returns how many batches store can apply at once: its
// ConcurrentWriters (PostgreSQL), else 1 (SQLite's one writer).
func Writers(store warp.Store) int {
	if w, ok := store.(warp.ConcurrentWriter); ok {
		return w.ConcurrentWriters()
	}
	return 1
}

type request struct {
	q    warp.QueuedHeartbeat
	done chan warp.HeartbeatAnswer
}

// Committer gathers heartbeats into batches for a Service. It implements
// warp.HeartbeatQueue.
type Committer struct {
	svc  *warp.Service
	cfg  Config
	in   chan request
	quit chan struct{}
	done chan struct{}
	stop sync.Once
	// answers holds the channels heartbeats wait for their answer on. A
	// channel goes back only empty, its answer received (or never sent):
	// no late answer can reach its next user.
	answers sync.Pool
}

// Start starts the batch workers and the count flusher for svc; Close
// stops them.
func Start(svc *warp.Service, cfg Config) *Committer {
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	if cfg.Linger == 0 {
		cfg.Linger = DefaultLinger
	}
	if cfg.CountFlush <= 0 {
		cfg.CountFlush = warp.DefaultCountFlush
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Committer{svc: svc, cfg: cfg, in: make(chan request, warp.MaxHeartbeatBatch),
		quit: make(chan struct{}), done: make(chan struct{})}
	c.answers.New = func() any { return make(chan warp.HeartbeatAnswer, 1) }
	var wg sync.WaitGroup
	for range cfg.Workers {
		wg.Go(c.work)
	}
	wg.Go(c.flush)
	go func() {
		wg.Wait()
		// The counts of the last batches, answered before quit.
		ctx, cancel := context.WithTimeout(context.Background(), warp.DatabaseTimeout)
		defer cancel()
		if err := svc.FlushCounts(ctx); err != nil {
			cfg.Logger.Error("write adoption counts at shutdown: lost", "err", err)
		}
		close(c.done)
	}()
	return c
}

// Queued reports how many heartbeats wait for a batch worker.
func (c *Committer) Queued() int { return len(c.in) }

// Close stops the group commit, answering what is queued first.
// Heartbeats after Close are answered warp.ErrUnavailable.
func (c *Committer) Close() error {
	c.stop.Do(func() { close(c.quit) })
	<-c.done
	return nil
}

// Heartbeat queues h (validated) for the next batch and waits for its
// answer.
func (c *Committer) Heartbeat(ctx context.Context, h warp.Heartbeat) (warp.HeartbeatResult, error) {
	req := request{q: warp.QueuedHeartbeat{Ctx: ctx, Heartbeat: h}, done: c.answers.Get().(chan warp.HeartbeatAnswer)}
	select {
	case c.in <- req:
	case <-ctx.Done():
		c.answers.Put(req.done)
		return warp.HeartbeatResult{}, ctx.Err()
	case <-c.done:
		c.answers.Put(req.done)
		return warp.HeartbeatResult{}, shuttingDown()
	}
	select {
	case a := <-req.done:
		c.answers.Put(req.done)
		return a.Result, a.Err
	case <-c.done:
		// Stopped: a request it took was answered before it stopped.
		select {
		case a := <-req.done:
			return a.Result, a.Err
		default:
			return warp.HeartbeatResult{}, shuttingDown()
		}
	case <-ctx.Done():
		// Applied or not, the caller is gone; the batch answers into the
		// buffered channel and moves on (the channel is not reused).
		return warp.HeartbeatResult{}, ctx.Err()
	}
}

func shuttingDown() error { return warp.Errorf(warp.ErrUnavailable, "the server is shutting down") }

// work applies batches until quit, then answers what is still queued.
func (c *Committer) work() {
	batch := make([]request, 0, warp.MaxHeartbeatBatch)
	var wait *time.Timer // the linger's, made at its first use
	prev := 0            // the previous batch's size
	for {
		select {
		case <-c.quit:
			for {
				select {
				case r := <-c.in:
					c.apply(append(batch[:0], r))
				default:
					return
				}
			}
		case r := <-c.in:
			batch = c.drain(append(batch[:0], r))
			if c.cfg.Linger > 0 && len(batch) < warp.MaxHeartbeatBatch && (len(batch) > 1 || prev > 1) {
				if wait == nil {
					wait = time.NewTimer(c.cfg.Linger)
				} else {
					wait.Reset(c.cfg.Linger)
				}
				batch = c.gather(batch, wait.C)
				wait.Stop()
			}
			prev = len(batch)
			c.apply(batch)
		}
	}
}

// drain appends what is queued to batch, up to warp.MaxHeartbeatBatch.
func (c *Committer) drain(batch []request) []request {
	for len(batch) < warp.MaxHeartbeatBatch {
		select {
		case r := <-c.in:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

// gather appends the heartbeats that arrive until done fires, up to
// warp.MaxHeartbeatBatch.
func (c *Committer) gather(batch []request, done <-chan time.Time) []request {
	for len(batch) < warp.MaxHeartbeatBatch {
		select {
		case r := <-c.in:
			batch = append(batch, r)
		case <-done:
			return batch
		}
	}
	return batch
}

// apply applies batch in one transaction and answers each heartbeat.
func (c *Committer) apply(batch []request) {
	qs := make([]warp.QueuedHeartbeat, len(batch))
	for i, r := range batch {
		qs[i] = r.q
	}
	for i, a := range c.svc.ApplyHeartbeats(qs) {
		batch[i].done <- a
	}
}

// flush writes the buffered adoption counts every CountFlush until quit;
// a failed flush keeps them for the next.
func (c *Committer) flush() {
	t := time.NewTicker(c.cfg.CountFlush)
	defer t.Stop()
	for {
		select {
		case <-c.quit:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), warp.DatabaseTimeout)
			if err := c.svc.FlushCounts(ctx); err != nil {
				c.cfg.Logger.Warn("write adoption counts: kept for the next flush", "err", err)
			}
			cancel()
		}
	}
}
