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

// Group commit of heartbeats: a batch is the lease core applied to many.
// ApplyHeartbeats takes the heartbeats that arrived together, in ticket
// order (the order every multi-ticket transaction locks in, so two
// replicas' batches cannot deadlock), and in one transaction
//
//   - reads the batch's leases and the mode in one query (Tx.ReadBatch);
//   - checks each heartbeat as a heartbeat alone is checked (fence, holder,
//     the per-token host bound) and applies Policy.Heartbeat to it;
//   - writes the heartbeat columns of every lease in one statement
//     (Tx.WriteBatch), and the rarer changes that end a lease or append
//     events one by one, as the other transitions are written.
//
// A heartbeat that fails its own checks (stale epoch, ended lease, not the
// holder, one host too many) is answered with its error and writes
// nothing; the others still commit. Each heartbeat is answered only after
// the transaction holding it committed, so an answered heartbeat is as
// durable as one applied alone. The batch's adoption counts wait in memory
// for the next flush (counts.go).
//
// Gathering the batches and flushing the counts on a timer are goroutines
// that live with whoever composes the Service (internal/groupcommit);
// without them, each heartbeat is a batch of one and writes its counts in
// its own transaction.

// MaxHeartbeatBatch bounds the heartbeats one group-commit transaction
// applies: enough to amortise a commit, small enough that SQLite's one
// writer is not held for long.
const MaxHeartbeatBatch = 256

// QueuedHeartbeat is one heartbeat of a batch, validated
// (ValidateHeartbeat), with the context of its request: its caller, and
// whether it is still waiting for the answer.
type QueuedHeartbeat struct {
	Ctx       context.Context
	Heartbeat Heartbeat
}

// HeartbeatAnswer is the outcome of one heartbeat of a batch.
type HeartbeatAnswer struct {
	Result HeartbeatResult
	Err    error
}

// HeartbeatQueue applies heartbeats that arrive together in shared
// transactions, through ApplyHeartbeats (internal/groupcommit).
type HeartbeatQueue interface {
	Heartbeat(ctx context.Context, h Heartbeat) (HeartbeatResult, error)
}

// UseGroupCommit routes every heartbeat, once validated, through q. Call
// it before the Service serves.
func (s *Service) UseGroupCommit(q HeartbeatQueue) { s.queue = q }

// ConcurrentWriter is implemented by stores whose write transactions run
// in parallel (internal/postgres: row locks, a pool of connections). A
// group commit then runs that many batches at once; a store without it
// (SQLite: one writer) gets one.
type ConcurrentWriter interface {
	ConcurrentWriters() int
}

// ApplyHeartbeats applies batch (at most MaxHeartbeatBatch heartbeats) in
// one transaction and answers each, in batch's order. Its adoption counts
// wait for the next FlushCounts.
func (s *Service) ApplyHeartbeats(batch []QueuedHeartbeat) []HeartbeatAnswer {
	return s.applyBatch(batch, false)
}

// applyBatch is ApplyHeartbeats; countsInTx writes the adoption counts in
// the batch's transaction instead of buffering them.
func (s *Service) applyBatch(batch []QueuedHeartbeat, countsInTx bool) []HeartbeatAnswer {
	now := s.now()
	order := ticketOrder(batch)
	var run *batchRun
	began := time.Now()
	ctx, cancel := batchContext(batch)
	defer cancel()
	err := s.store.Update(ctx, func(tx Tx) error {
		run = s.newBatchRun(tx, batch, now) // a store may run fn again
		if err := run.read(order); err != nil {
			return err
		}
		for _, i := range order {
			if err := run.apply(i); err != nil {
				return err // the transaction is broken: the whole batch fails or retries
			}
		}
		return run.write(countsInTx)
	})
	answers := make([]HeartbeatAnswer, len(batch))
	if err != nil {
		s.groupStats.failed.Add(1)
		for i := range answers {
			answers[i].Err = err
		}
	} else {
		s.groupStats.committed(len(batch), time.Since(began))
		s.committed(run)
		answers = run.answers
	}
	for i := range answers {
		answers[i].Result.MaxRetryGap = s.cfg.Policy.MaxRetryGap()
	}
	return answers
}

// batchContext is what a batch's transaction runs under: its requests'
// latest deadline, after which none of them waits for the answer (a
// database that does not answer fails the batch then, instead of holding
// every later heartbeat behind it); no deadline when one of them has none.
func batchContext(batch []QueuedHeartbeat) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, q := range batch {
		d, ok := time.Time{}, false
		if q.Ctx != nil {
			d, ok = q.Ctx.Deadline()
		}
		if !ok {
			return context.WithCancel(context.Background())
		}
		latest = later(latest, d)
	}
	return context.WithDeadline(context.Background(), latest)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// ticketOrder returns the indexes of batch in ticket order.
func ticketOrder(batch []QueuedHeartbeat) []int {
	order := make([]int, len(batch))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return strings.Compare(batch[x].Heartbeat.Ticket, batch[y].Heartbeat.Ticket) })
	return order
}

// committed keeps what a committed batch leaves for later: its buffered
// adoption counts and the hosts now known to be recorded.
func (s *Service) committed(run *batchRun) {
	for _, c := range run.counts {
		s.hosts.learn(c.Host)
	}
	if len(run.buffered) == 0 {
		return
	}
	s.counts.add(run.buffered)
	if s.counts.pending() >= maxPendingCounts {
		ctx, cancel := context.WithTimeout(context.Background(), DatabaseTimeout)
		defer cancel()
		if err := s.FlushCounts(ctx); err != nil {
			s.log.Warn("write adoption counts: kept for the next flush", "err", err, "rows", s.counts.pending())
		}
	}
}

// batchRun is one attempt at a batch's transaction.
type batchRun struct {
	s       *Service
	tx      Tx
	batch   []QueuedHeartbeat
	now     time.Time
	mode    Mode
	answers []HeartbeatAnswer
	// cur holds each ticket's current lease as this batch left it: a
	// heartbeat sees the earlier ones of its ticket.
	cur map[string]TicketLease
	// beats holds the heartbeat columns to write, per ticket, in the
	// order first staged (beatOrder); a ticket a full write carries is
	// dropped from it.
	beats     map[string]Lease
	beatOrder []string
	verdicts  hostCounts
	// counts are the adoption counts, summed per (host, token, schema);
	// newHosts the hosts whose first heartbeat an agent token's bound
	// admitted here, whose rows are written in this transaction.
	counts   []HeartbeatCount
	countAt  map[hostSchema]int
	newHosts map[string]map[string]bool // token → hosts
	// buffered are the counts write left for the buffer.
	buffered []HeartbeatCount
}

type hostSchema struct {
	host, token string
	schema      int
}

func (s *Service) newBatchRun(tx Tx, batch []QueuedHeartbeat, now time.Time) *batchRun {
	return &batchRun{s: s, tx: tx, batch: batch, now: now, answers: make([]HeartbeatAnswer, len(batch)),
		beats: map[string]Lease{}, verdicts: hostCounts{}, countAt: map[hostSchema]int{}, newHosts: map[string]map[string]bool{}}
}

// read reads the leases of the batch's tickets (locked, in ticket order)
// and then the mode: a mode change that rewrote these leases committed
// before it.
func (r *batchRun) read(order []int) error {
	var ids []string
	for _, i := range order {
		if id := r.batch[i].Heartbeat.Ticket; len(ids) == 0 || ids[len(ids)-1] != id {
			ids = append(ids, id)
		}
	}
	cur, v, found, err := r.tx.ReadBatch(context.Background(), ids, MetaMode)
	if err != nil {
		return err
	}
	r.cur, r.mode = cur, r.s.cfg.InitialMode
	if found {
		if r.mode, err = ParseMode(v); err != nil {
			return fmt.Errorf("read mode: %w", err)
		}
	}
	return nil
}

// apply checks and applies heartbeat i. A request error becomes its
// answer; any other error has broken the transaction and is returned.
func (r *batchRun) apply(i int) error {
	q := r.batch[i]
	if err := q.Ctx.Err(); err != nil {
		r.answers[i].Err = err
		return nil
	}
	// The request's values (its caller), without its cancellation: a
	// client that hangs up from here on would otherwise break the
	// transaction under every other heartbeat of the batch. Its heartbeat
	// is applied; the answer finds no one.
	ctx := context.WithoutCancel(q.Ctx)
	h := q.Heartbeat
	caller, _ := CallerFrom(ctx)
	t, l, err := r.lease(ctx, h)
	host := HeartbeatHost(h, l)
	if err == nil {
		err = r.admitHost(ctx, caller, host)
	}
	if err != nil {
		if !requestError(err) {
			return err
		}
		r.answers[i].Err = err
		return nil
	}
	ch, res := r.s.cfg.Policy.Heartbeat(r.mode, t, l, h, r.s.cfg.ReleaseOnExit, r.now)
	if err := r.stage(ctx, l, ch); err != nil {
		return err
	}
	if h.Note != nil {
		at := h.NoteAt
		if at.IsZero() || at.After(r.now) {
			at = r.now
		}
		if err := r.tx.SetAttemptNote(ctx, l.Ticket, l.Epoch, *h.Note, at); err != nil {
			return fmt.Errorf("record the note of %s/%d: %w", l.Ticket, l.Epoch, err)
		}
	}
	r.answers[i].Result = res
	r.count(host, caller.Token, h.SchemaVersion)
	return nil
}

// lease returns the ticket and the current lease h writes to, fenced and
// authorised for its caller. A ticket the batch read found no lease for
// takes the reads that give the precise error.
func (r *batchRun) lease(ctx context.Context, h Heartbeat) (Ticket, Lease, error) {
	epoch := heartbeatEpoch(h)
	tl, ok := r.cur[h.Ticket]
	if !ok || tl.Lease == nil {
		return r.s.heldLease(ctx, r.tx, h.Ticket, epoch)
	}
	return checkHeartbeatLease(ctx, tl.Ticket, *tl.Lease, epoch)
}

// admitHost enforces the per-token host bound (CheckHostBound) on an
// agent token's heartbeat that names a host not known to be recorded.
func (r *batchRun) admitHost(ctx context.Context, c Caller, host string) error {
	bound := r.s.cfg.MaxHostsPerToken
	if !c.Agent || bound <= 0 || r.s.hosts.known(host) || r.newHosts[c.Token][host] {
		return nil
	}
	recorded, err := r.tx.HostRecorded(ctx, host)
	if err != nil {
		return fmt.Errorf("read host %s: %w", host, err)
	}
	if recorded {
		return nil
	}
	n, err := r.tx.HostsOfToken(ctx, c.Token, r.now.Add(-DefaultAdoptionWindow))
	if err != nil {
		return fmt.Errorf("count hosts: %w", err)
	}
	if err := CheckHostBound(bound, n+len(r.newHosts[c.Token])+1); err != nil {
		return err
	}
	if r.newHosts[c.Token] == nil {
		r.newHosts[c.Token] = map[string]bool{}
	}
	r.newHosts[c.Token][host] = true
	return nil
}

// stage keeps change ch of lease l for the batch's writes: the heartbeat
// columns alone when that is all it changes, else written at once (which
// carries the ticket's heartbeat columns staged so far).
func (r *batchRun) stage(ctx context.Context, l Lease, ch Change) error {
	id := ch.Lease.Ticket
	if ch.LeaseDirty && !ch.InsertLease && !ch.TicketDirty && len(ch.Events) == 0 && SameHolding(l, ch.Lease) {
		if _, ok := r.beats[id]; !ok {
			r.beatOrder = append(r.beatOrder, id)
		}
		r.beats[id] = ch.Lease
		r.verdicts.add(ch.Lease.Host, ch.Counts)
	} else {
		delete(r.beats, id)
		if _, err := r.s.writeCounting(ctx, r.tx, &ch, r.verdicts); err != nil {
			return err
		}
	}
	tl := r.cur[id]
	after := ch.Lease
	tl.Lease = &after
	if ch.TicketDirty {
		tl.Ticket = ch.Ticket
	}
	r.cur[id] = tl
	return nil
}

// count adds one heartbeat to the batch's adoption counts.
func (r *batchRun) count(host, token string, schema int) {
	k := hostSchema{host, token, schema}
	if j, ok := r.countAt[k]; ok {
		r.counts[j].N++
		return
	}
	r.countAt[k] = len(r.counts)
	r.counts = append(r.counts, HeartbeatCount{Host: host, Token: token, SchemaVersion: schema, At: r.now, N: 1})
}

// write writes the staged heartbeat columns in ticket order, the adoption
// counts that belong in this transaction (all of them with countsInTx,
// else those of newly admitted hosts, whose rows the bound counts), and
// the held-lease counts per host.
func (r *batchRun) write(countsInTx bool) error {
	ls := make([]Lease, 0, len(r.beats))
	for _, id := range r.beatOrder {
		if l, ok := r.beats[id]; ok {
			ls = append(ls, l)
			delete(r.beats, id) // once, should the ticket be staged twice
		}
	}
	var cs []HeartbeatCount
	r.buffered = r.buffered[:0]
	for _, c := range r.counts {
		if countsInTx || r.newHosts[c.Token][c.Host] {
			cs = append(cs, c)
		} else {
			r.buffered = append(r.buffered, c)
		}
	}
	sortCounts(cs)
	if err := r.tx.WriteBatch(context.Background(), ls, cs); err != nil {
		return err
	}
	return r.verdicts.flush(context.Background(), r.tx)
}

// CheckHostBound is the per-token host bound: an agent token whose
// heartbeat names a host not yet recorded brings the hosts it reported
// within the adoption window to hosts (this one included); more than max
// is ErrTooManyHosts. max 0 (or less) is no bound.
func CheckHostBound(max, hosts int) error {
	if max <= 0 || hosts <= max {
		return nil
	}
	return Errorf(ErrTooManyHosts, "this agent token has reported %d hosts in the last %s, at most %d allowed: reuse host names, give each host its own token, or raise warp serve --max-hosts-per-token",
		hosts, DefaultAdoptionWindow, max)
}

// maxKnownHosts bounds the hosts a Service remembers as recorded: a fleet
// of short-lived hosts (a container's name each) would otherwise grow the
// set for as long as the process runs. Past it the set starts over, and a
// forgotten host's next heartbeat of an agent token reads its row once
// more.
var maxKnownHosts = 1 << 16

// knownHosts holds the hosts this process saw recorded, so an agent
// token's heartbeat skips the reads of the host bound for them.
type knownHosts struct {
	mu sync.Mutex
	m  map[string]bool
}

func (k *knownHosts) known(host string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.m[host]
}

func (k *knownHosts) learn(host string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil || (!k.m[host] && len(k.m) >= maxKnownHosts) {
		k.m = map[string]bool{} // a new map: clear would keep the old one's memory
	}
	k.m[host] = true
}

func heartbeatEpoch(h Heartbeat) int64 {
	if h.SchemaVersion == 1 {
		return 0 // v1 names no epoch: the current lease
	}
	return h.Epoch
}

// requestError reports an error that belongs to one heartbeat (its ticket,
// epoch, lease or caller), not to the transaction: a domain error other
// than ErrUnavailable. Anything else (a failed statement) has broken the
// transaction.
func requestError(err error) bool {
	var e *Error
	return errors.As(err, &e) && !errors.Is(err, ErrUnavailable)
}
