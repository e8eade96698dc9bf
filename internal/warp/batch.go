package warp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Group commit of heartbeats. Heartbeats that arrive while a transaction
// is being committed queue up, and the next transaction applies all of
// them (up to MaxHeartbeatBatch): one BEGIN, one mode read and one
// commit for the whole batch, instead of per heartbeat; its adoption
// counts wait in memory for the next flush (counts.go). Each heartbeat is
// answered only after the transaction holding it committed, so an
// answered heartbeat is as durable as before. A heartbeat that fails its own checks (stale epoch,
// ended lease, not the holder) is answered with its error and writes
// nothing; the others in the batch still commit.
//
// A heartbeat of an agent token that names a host this process has not
// recorded yet takes the single-heartbeat path (its own transaction): that
// is where the per-token host bound (Config.MaxHostsPerToken) is enforced,
// and a refused heartbeat must roll back its host record without touching
// the batch.

// Lingering. A batch that finds only what was queued while the previous
// transaction ran stays small when the transaction is short: measured on
// SQLite with 64 clients, batches averaged 3.4 heartbeats and a third of
// the whole process's CPU went to per-transaction work. So once
// heartbeats are seen arriving together (the batch found others queued,
// or the previous one held several), the batcher waits Config.BatchLinger
// for more before it begins; meanwhile the CPU goes to the HTTP work that
// brings them. A heartbeat arriving alone, after a batch of one, is not
// kept waiting.

// DefaultBatchLinger is Config.BatchLinger's default: on SQLite with 64
// clients, 250 µs to 1 ms all gave 15-25 % more heartbeats a second than
// no wait, 400 µs the most (docs/BENCHMARKS.md).
const DefaultBatchLinger = 400 * time.Microsecond

// MaxHeartbeatBatch bounds the heartbeats one group-commit transaction
// applies: enough to amortise a commit, small enough that SQLite's one
// writer is not held for long.
const MaxHeartbeatBatch = 256

type hbRequest struct {
	ctx  context.Context
	h    Heartbeat
	done chan hbAnswer
}

type hbAnswer struct {
	res HeartbeatResult
	err error
}

// batcher runs the group commit. Its goroutine starts with the first
// heartbeat and ends at Service.Close.
type batcher struct {
	workers int           // batches applied at once
	linger  time.Duration // Config.BatchLinger; 0: none
	// counts buffers committed batches' adoption counts until a flush
	// (counts.go), countFlush after it turned non-empty.
	counts     *countBuffer
	countFlush time.Duration
	start      sync.Once
	stop       sync.Once
	in         chan hbRequest
	// answers holds the channels heartbeats wait for their answer on. A
	// channel goes back only empty, its answer received (or never sent):
	// no late answer can reach its next user. (The Service's own pool: a
	// channel belongs to the synctest bubble that made it.)
	answers sync.Pool
	quit    chan struct{}
	done    chan struct{}
	// known holds the hosts this process recorded (only the batcher
	// goroutine reads and writes it after start).
	mu    sync.Mutex
	known map[string]bool
	st    *batchStats
}

func newBatcher(workers int, linger, countFlush time.Duration) *batcher {
	b := &batcher{workers: max(workers, 1), linger: max(linger, 0), in: make(chan hbRequest, MaxHeartbeatBatch), quit: make(chan struct{}),
		done: make(chan struct{}), known: map[string]bool{}, counts: newCountBuffer(), countFlush: countFlush, st: newBatchStats()}
	b.answers.New = func() any { return make(chan hbAnswer, 1) }
	return b
}

// ConcurrentWriter is implemented by stores whose write transactions run
// in parallel (internal/postgres: row locks, a pool of connections). The
// group commit then runs that many batches at once; a store without it
// (SQLite: one writer) gets one.
type ConcurrentWriter interface {
	ConcurrentWriters() int
}

// stats returns the group commit's statistics, nil without a group commit.
func (b *batcher) stats() *batchStats {
	if b == nil {
		return nil
	}
	return b.st
}

func (b *batcher) isKnown(host string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.known[host]
}

// maxKnownHosts bounds the hosts a batcher remembers as recorded: a fleet
// of short-lived hosts (a container's name each) would otherwise grow the
// set for as long as the process runs. Past it the set starts over, and a
// forgotten host's next heartbeat of an agent token takes the single path
// (its bound checked against the database) once more.
var maxKnownHosts = 1 << 16

func (b *batcher) learn(host string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.known[host] && len(b.known) >= maxKnownHosts {
		b.known = map[string]bool{} // a new map: clear would keep the old one's memory
	}
	b.known[host] = true
}

// Close stops the heartbeat group commit, answering what is queued first.
// Heartbeats after Close are answered ErrUnavailable.
func (s *Service) Close() error {
	b := s.batch
	if b == nil {
		return nil
	}
	b.stop.Do(func() {
		started := true
		b.start.Do(func() { started = false; close(b.done) })
		if started {
			close(b.quit)
		}
	})
	<-b.done
	return nil
}

// heartbeatBatched queues h for the next group commit and waits for its
// answer.
func (s *Service) heartbeatBatched(ctx context.Context, h Heartbeat) (HeartbeatResult, error) {
	b := s.batch
	b.start.Do(func() {
		var wg sync.WaitGroup
		for range b.workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.runBatches()
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.flushCounts(b.quit)
		}()
		go func() {
			wg.Wait()
			// The counts of the last batches, answered before quit.
			if err := s.FlushCounts(context.Background()); err != nil {
				s.log.Error("write adoption counts at shutdown: lost", "err", err, "rows", b.counts.pending())
			}
			close(b.done)
		}()
	})
	req := hbRequest{ctx: ctx, h: h, done: b.answers.Get().(chan hbAnswer)}
	select {
	case b.in <- req:
	case <-ctx.Done():
		b.answers.Put(req.done)
		return HeartbeatResult{}, ctx.Err()
	case <-b.done:
		b.answers.Put(req.done)
		return HeartbeatResult{}, Errorf(ErrUnavailable, "the server is shutting down")
	}
	select {
	case a := <-req.done:
		b.answers.Put(req.done)
		return a.res, a.err
	case <-b.done:
		// Stopped: a request it took was answered before it stopped.
		select {
		case a := <-req.done:
			return a.res, a.err
		default:
			return HeartbeatResult{}, Errorf(ErrUnavailable, "the server is shutting down")
		}
	case <-ctx.Done():
		// Applied or not, the caller is gone; the batch answers into the
		// buffered channel and moves on (the channel is not reused).
		return HeartbeatResult{}, ctx.Err()
	}
}

func (s *Service) runBatches() {
	b := s.batch
	batch := make([]hbRequest, 0, MaxHeartbeatBatch)
	sc := &batchScratch{}
	var wait *time.Timer // the linger's, made at its first use
	prev := 0            // the previous batch's size
	for {
		select {
		case <-b.quit:
			// Answer what is still queued, then stop.
			for {
				select {
				case r := <-b.in:
					batch = append(batch[:0], r)
					s.applyBatch(batch, sc)
				default:
					return
				}
			}
		case r := <-b.in:
			batch = b.drain(append(batch[:0], r))
			if b.linger > 0 && len(batch) < MaxHeartbeatBatch && (len(batch) > 1 || prev > 1) {
				if wait == nil {
					wait = time.NewTimer(b.linger)
				} else {
					wait.Reset(b.linger)
				}
				batch = b.gather(batch, wait.C)
				wait.Stop()
			}
			prev = len(batch)
			s.applyBatch(batch, sc)
		}
	}
}

// drain appends what is queued to batch, up to MaxHeartbeatBatch.
func (b *batcher) drain(batch []hbRequest) []hbRequest {
	for len(batch) < MaxHeartbeatBatch {
		select {
		case r := <-b.in:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

// gather appends the heartbeats that arrive until done fires, up to
// MaxHeartbeatBatch.
func (b *batcher) gather(batch []hbRequest, done <-chan time.Time) []hbRequest {
	for len(batch) < MaxHeartbeatBatch {
		select {
		case r := <-b.in:
			batch = append(batch, r)
		case <-done:
			return batch
		}
	}
	return batch
}

// applyBatch applies a batch in one transaction. A heartbeat the per-token
// host bound must check (an agent naming a host this process has not
// recorded) is left out of it and applied on its own afterwards.
func (s *Service) applyBatch(batch []hbRequest, sc *batchScratch) {
	b := s.batch
	now := s.now()
	sc.reset(len(batch))
	answers, single, byTicket, lsBuf := sc.answers, sc.single, sc.byTicket, sc.ls
	// Tickets are locked in id order, the order every multi-ticket
	// transaction uses (the verdict pass too), so two replicas' batches
	// cannot deadlock.
	for i := range byTicket {
		byTicket[i] = i
	}
	slices.SortStableFunc(byTicket, func(x, y int) int { return strings.Compare(batch[x].h.Ticket, batch[y].h.Ticket) })
	var hosts []string
	var cs []HeartbeatCount
	began := time.Now()
	err := s.store.Update(context.Background(), func(tx Tx) error {
		hosts, cs = hosts[:0], cs[:0]  // a store may run fn again
		counts := map[hostSchema]int{} // index in cs
		verdictCounts := hostCounts{}
		// With a HeartbeatBatchTx, every lease of the batch is read (and
		// locked, in ticket order) with the mode in one round trip, and the
		// heartbeats that change only heartbeat columns are written with
		// the batch's counts in one more. The mode is read after the locks:
		// a mode change that rewrote these leases committed before it.
		bulk, _ := tx.(HeartbeatBatchTx)
		var cur map[string]TicketLease
		// ls holds the heartbeat columns to write, one entry per ticket
		// (pending: its index); an entry a later full write of the ticket
		// carries is dropped.
		ls := lsBuf[:0]
		var dropped []bool
		pending := map[string]int{}
		var mode Mode
		if bulk != nil {
			var ids []string
			for _, i := range byTicket {
				if id := batch[i].h.Ticket; len(ids) == 0 || ids[len(ids)-1] != id {
					ids = append(ids, id)
				}
			}
			var v string
			var found bool
			var err error
			if cur, v, found, err = bulk.ReadBatch(context.Background(), ids, MetaMode); err != nil {
				return err
			}
			mode = s.cfg.InitialMode
			if found {
				if mode, err = ParseMode(v); err != nil {
					return fmt.Errorf("read mode: %w", err)
				}
			}
		} else {
			var err error
			if mode, err = s.currentMode(context.Background(), tx); err != nil {
				return err
			}
		}
		for n, i := range byTicket {
			r := batch[i]
			answers[i], single[i] = hbAnswer{}, false
			if err := r.ctx.Err(); err != nil {
				answers[i].err = err
				continue
			}
			// The request's values (its caller), without its cancellation:
			// a client that hangs up from here on would otherwise break the
			// transaction under every other heartbeat of the batch. Its
			// heartbeat is applied; the answer finds no one.
			rctx := context.WithoutCancel(r.ctx)
			var t Ticket
			var l Lease
			var err error
			if tl, ok := cur[r.h.Ticket]; ok && tl.Lease != nil {
				t, l, err = checkHeartbeatLease(rctx, tl.Ticket, *tl.Lease, heartbeatEpoch(r.h))
			} else {
				t, l, err = s.heartbeatLease(rctx, tx, r.h.Ticket, heartbeatEpoch(r.h))
			}
			if err != nil {
				if !requestError(err) {
					return err // the transaction is broken: the whole batch fails or retries
				}
				answers[i].err = err
				continue
			}
			caller, _ := CallerFrom(rctx)
			host := HeartbeatHost(r.h, l)
			if caller.Agent && s.cfg.MaxHostsPerToken > 0 && !b.isKnown(host) {
				single[i] = true
				continue
			}
			ch, res := s.cfg.Policy.Heartbeat(mode, t, l, r.h, s.cfg.ReleaseOnExit, now)
			if bulk != nil && ch.LeaseDirty && !ch.InsertLease && !ch.TicketDirty && len(ch.Events) == 0 && SameHolding(l, ch.Lease) {
				if j, ok := pending[t.ID]; ok {
					ls[j] = ch.Lease
				} else {
					pending[t.ID] = len(ls)
					ls = append(ls, ch.Lease)
					dropped = append(dropped, false)
				}
				verdictCounts.add(ch.Lease.Host, ch.Counts)
			} else {
				if j, ok := pending[t.ID]; ok {
					dropped[j] = true // this write carries the ticket's earlier changes too
					delete(pending, t.ID)
				}
				if _, err := s.writeCounting(rctx, tx, ch, verdictCounts); err != nil {
					return err
				}
			}
			if tl, ok := cur[t.ID]; ok && n+1 < len(byTicket) && batch[byTicket[n+1]].h.Ticket == r.h.Ticket {
				// The next heartbeat of the batch, of the same ticket, sees this one.
				after := ch.Lease
				tl.Lease = &after
				if ch.TicketDirty {
					tl.Ticket = ch.Ticket
				}
				cur[t.ID] = tl
			}
			answers[i].res = res
			k := hostSchema{host, caller.Token, r.h.SchemaVersion}
			if j, ok := counts[k]; ok {
				cs[j].N++
			} else {
				counts[k] = len(cs)
				cs = append(cs, HeartbeatCount{Host: host, Token: caller.Token, SchemaVersion: r.h.SchemaVersion, At: now, N: 1})
				hosts = append(hosts, host)
			}
		}
		// The heartbeat columns of the batch's leases, locked above, in
		// ticket order; the adoption counts go to the buffer once this
		// commits (counts.go).
		if len(pending) < len(ls) {
			kept := ls[:0]
			for j, l := range ls {
				if !dropped[j] {
					kept = append(kept, l)
				}
			}
			ls = kept
		}
		if bulk != nil {
			if err := bulk.WriteBatch(context.Background(), ls, nil); err != nil {
				return err
			}
		}
		return verdictCounts.flush(context.Background(), tx)
	})
	if err == nil {
		took := time.Since(began)
		b.counts.add(cs)
		for _, h := range hosts {
			b.learn(h)
		}
		n := len(batch)
		for _, one := range single {
			if one {
				n--
			}
		}
		if n > 0 {
			b.st.committed(n, took)
		}
	} else {
		b.st.failed.Add(1)
	}
	for i, r := range batch {
		if single[i] {
			continue
		}
		a := answers[i]
		if err != nil {
			a = hbAnswer{err: err}
		}
		a.res.MaxRetryGap = s.cfg.Policy.MaxRetryGap()
		r.done <- a
	}
	for i, r := range batch {
		if !single[i] {
			continue
		}
		res, host, err := s.heartbeatOne(r.ctx, r.h)
		if err == nil {
			b.learn(host)
		}
		r.done <- hbAnswer{res: res, err: err}
	}
}

// batchScratch holds the slices a batch worker's batches reuse: they are
// made once, at the size of the largest batch yet, instead of at every
// batch (a Lease is some 400 bytes).
type batchScratch struct {
	answers  []hbAnswer
	single   []bool
	byTicket []int
	ls       []Lease
}

// reset readies the scratch for a batch of n.
func (sc *batchScratch) reset(n int) {
	if cap(sc.answers) < n {
		sc.answers, sc.single, sc.byTicket, sc.ls = make([]hbAnswer, n), make([]bool, n), make([]int, n), make([]Lease, 0, n)
	}
	sc.answers, sc.single, sc.byTicket, sc.ls = sc.answers[:n], sc.single[:n], sc.byTicket[:n], sc.ls[:0]
	clear(sc.answers)
	clear(sc.single)
}

type hostSchema struct {
	host, token string
	schema      int
}

func heartbeatEpoch(h Heartbeat) int64 {
	if h.SchemaVersion == 1 {
		return 0 // v1 names no epoch: the current lease
	}
	return h.Epoch
}

// heartbeatOne applies h in its own transaction and returns the host it
// was counted under.
func (s *Service) heartbeatOne(ctx context.Context, h Heartbeat) (HeartbeatResult, string, error) {
	now := s.now()
	var res HeartbeatResult
	host := ""
	err := s.store.Update(ctx, func(tx Tx) error {
		t, l, err := s.heartbeatLease(ctx, tx, h.Ticket, heartbeatEpoch(h))
		if err != nil {
			return err
		}
		mode, err := s.currentMode(ctx, tx)
		if err != nil {
			return err
		}
		host = HeartbeatHost(h, l)
		if err := s.countHeartbeat(ctx, tx, host, h.SchemaVersion, now); err != nil {
			return err
		}
		var ch Change
		ch, res = s.cfg.Policy.Heartbeat(mode, t, l, h, s.cfg.ReleaseOnExit, now)
		_, err = s.write(ctx, tx, ch)
		return err
	})
	res.MaxRetryGap = s.cfg.Policy.MaxRetryGap()
	return res, host, err
}

// requestError reports an error that belongs to one heartbeat (its ticket,
// epoch, lease or caller), not to the transaction: a domain error other
// than ErrUnavailable. Anything else (a failed statement) has broken the
// transaction.
func requestError(err error) bool {
	var e *Error
	return errors.As(err, &e) && !errors.Is(err, ErrUnavailable)
}
