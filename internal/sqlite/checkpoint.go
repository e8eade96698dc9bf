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
// neither waits for nor blocks the writer or the readers, but under
// unbroken writes it never finds the WAL still, so the WAL cannot start
// over; the writer therefore keeps its own checkpoint at ten times
// SQLite's default (wal_autocheckpoint=WriterCheckpointPages), which then
// has little left to copy and starts the WAL over. Measured, three pairs:
// the default 0.482-0.538 of the no-op handler, p99 11.5-16 ms; the
// writer's checkpoint at 10,000 pages alone 0.530-0.545, 9.9-11.9 ms; with
// the checkpointer 0.538-0.577, 9.4-10.7 ms. When writes pause, the next
// write after a complete checkpoint starts the WAL over, as before.
// Another process on the file keeps SQLite's default.

// WriterCheckpointPages is the writer connection's wal_autocheckpoint:
// the WAL pages past which a commit checkpoints itself.
const WriterCheckpointPages = 10_000

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
	// runs counts completed checkpoints; lastErr is the last
	// failure's text (empty after a success).
	runs    atomic.Int64
	mu      sync.Mutex
	lastErr string
}

func newCheckpointer(conn *sql.DB, every int64, after time.Duration) *checkpointer {
	c := &checkpointer{conn: conn, kick: make(chan struct{}, 1), dirty: make(chan struct{}, 1), stop: make(chan struct{}),
		every: every, after: after}
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

// checkpoint runs one PASSIVE checkpoint.
func (c *checkpointer) checkpoint() {
	var busy, log, done int64
	err := c.conn.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &done)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.lastErr = fmt.Sprintf("checkpoint: %v", err)
		return
	}
	c.lastErr = ""
	c.runs.Add(1)
}

// close stops the goroutine and closes the connection; it may be called
// again.
func (c *checkpointer) close() error {
	var err error
	c.stopped.Do(func() {
		close(c.stop)
		c.done.Wait()
		err = c.conn.Close()
	})
	return err
}
