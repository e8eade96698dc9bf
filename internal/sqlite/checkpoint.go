package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Checkpoints off the writer's path. By default SQLite checkpoints the WAL
// inside the commit that takes it past 1,000 pages: that commit copies the
// pages into the database file and fsyncs it (synchronous=NORMAL syncs at
// checkpoints), and the heartbeats of its group commit wait on the disk
// meanwhile: under 64 clients the process idled at 177 % CPU of 200 %.
//
// So a goroutine of the store runs PASSIVE checkpoints on a connection of
// its own: after every CheckpointCommits write transactions, and
// CheckpointInterval after a commit when fewer came. A PASSIVE checkpoint
// neither waits for nor blocks the writer or the readers. Measured, three
// pairs: the default 0.482-0.538 of the no-op handler, p99 11.5-16 ms; the
// writer's checkpoint at 10,000 pages alone 0.530-0.545, 9.9-11.9 ms; with
// the checkpointer 0.538-0.577, 9.4-10.7 ms.
//
// Under unbroken writes, though, a pass never finds the WAL still, and the
// WAL starts over only at a write transaction that begins with every frame
// copied. Past RestartFrames the checkpointer therefore ends its passes
// with the writer held (restart). The writer keeps a checkpoint of its own
// at WriterCheckpointPages, ten times SQLite's default, as a backstop: it
// copies and syncs inside a commit everything since the last pass, which
// at 1M held leases, heartbeats in random order, stopped the writer for
// 40-100 ms every few seconds. Another process on the file keeps SQLite's
// default.

// WriterCheckpointPages is the writer connection's wal_autocheckpoint:
// the WAL pages past which a commit checkpoints itself.
const WriterCheckpointPages = 10_000

// RestartFrames is the WAL's size, in frames (pages), past which the
// checkpointer starts it over: 16 MiB of 4 KiB pages.
var RestartFrames int64 = 4_000

// Defaults of the checkpointer.
var (
	// CheckpointCommits is how many write transactions start a checkpoint.
	CheckpointCommits int64 = 256
	// CheckpointInterval is how long after a commit a checkpoint runs when
	// fewer than CheckpointCommits came.
	CheckpointInterval = time.Second
)

// checkpointer runs the store's checkpoints.
type checkpointer struct {
	conn    *sql.DB       // one connection, not the writer's
	commits atomic.Int64  // write transactions since the last checkpoint
	kick    chan struct{} // a checkpoint is due now
	dirty   chan struct{} // a commit happened since the last checkpoint
	stop    chan struct{}
	stopped sync.Once
	done    sync.WaitGroup
	every   int64
	after   time.Duration
	writer  *sql.DB         // the store's writer, held by a restart's last pass
	ctx     context.Context // ends when the checkpointer stops
	cancel  context.CancelFunc
	// runs counts completed passes, holds the passes run with the writer
	// held, restarts those that copied every frame; lastErr is the last
	// failure's text (empty after a success).
	runs     atomic.Int64
	holds    atomic.Int64
	restarts atomic.Int64
	mu       sync.Mutex
	lastErr  string
}

func newCheckpointer(conn, writer *sql.DB, every int64, after time.Duration) *checkpointer {
	c := &checkpointer{conn: conn, writer: writer, kick: make(chan struct{}, 1), dirty: make(chan struct{}, 1), stop: make(chan struct{}),
		every: every, after: after}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.done.Add(1)
	go c.run()
	return c
}

func nudge(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// committed records a write transaction.
func (c *checkpointer) committed() {
	if c.commits.Add(1) >= c.every {
		nudge(c.kick)
	} else {
		nudge(c.dirty)
	}
}

func (c *checkpointer) run() {
	defer c.done.Done()
	var wait *time.Timer
	for {
		select {
		case <-c.stop:
			return
		case <-c.kick:
		case <-c.dirty:
			if wait == nil {
				wait = time.NewTimer(c.after)
			} else {
				wait.Reset(c.after)
			}
			select {
			case <-c.stop:
				wait.Stop()
				return
			case <-c.kick:
				wait.Stop()
			case <-wait.C:
			}
		}
		c.commits.Store(0)
		select {
		case <-c.kick: // the commits counted are this checkpoint's
		default:
		}
		c.checkpoint()
	}
}

// checkpoint runs one PASSIVE checkpoint, and starts the WAL over when
// it holds RestartFrames or more.
func (c *checkpointer) checkpoint() {
	log, _, err := c.pass()
	if err == nil && log >= RestartFrames {
		c.restart(log)
	}
}

// restart starts the WAL over. Each pass copies the frames committed
// before it began while more commit, so passes run back to back while
// each has fewer to copy than the one before (what one copies committed
// during the previous one), at most restartPasses of them, until one
// copies at most RestartFrames/8; then the last runs with the writer
// connection held. No write transaction begins until it is
// done, and the next one finds every frame copied and starts the WAL over
// (unless a reader still reads frames of it: the next restart then tries
// again). The writer waits for that one short pass.
func (c *checkpointer) restart(log int64) {
	prev, short := log, false
	for range restartPasses {
		n, done, err := c.pass()
		if err != nil || n < prev { // failed, or the WAL started over meanwhile
			return
		}
		if done < n {
			// A reader's snapshot (a backup, another process) keeps
			// frames the pass cannot copy: no pass can start the WAL
			// over until it ends, so the writer is not held for one.
			return
		}
		copied := n - prev
		prev = n
		if short = copied <= RestartFrames/8; short {
			break
		}
	}
	if !short {
		// Commits outpace the passes (large transactions back to back):
		// the last pass would hold the writer as long. The next
		// checkpoint tries again; the writer's backstop bounds the WAL.
		return
	}
	w, err := c.writer.Conn(c.ctx)
	if err != nil {
		return // stopping
	}
	defer w.Close()
	c.holds.Add(1)
	if log, done, err := c.pass(); err == nil && done == log {
		c.restarts.Add(1)
	}
}

// restartPasses bounds the passes of a restart before its last.
const restartPasses = 4

// pass runs one PASSIVE checkpoint and returns the WAL's frames and how
// many of them are copied into the database file.
func (c *checkpointer) pass() (log, done int64, err error) {
	var busy int64
	err = c.conn.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &done)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.lastErr = fmt.Sprintf("checkpoint: %v", err)
		return 0, 0, err
	}
	c.lastErr = ""
	c.runs.Add(1)
	return log, done, nil
}

// close stops the goroutine and closes the connection; it may be called
// again.
func (c *checkpointer) close() error {
	var err error
	c.stopped.Do(func() {
		close(c.stop)
		c.cancel()
		c.done.Wait()
		err = c.conn.Close()
	})
	return err
}
