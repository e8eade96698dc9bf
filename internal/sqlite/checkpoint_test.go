package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/gyrum-labs/warp/internal/testsupport/storetest"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/warp"
)

// openCheckpointing opens a store whose checkpointer runs after every
// commits write transactions, or after interval.
func openCheckpointing(t *testing.T, commits int64, interval time.Duration) (*sqlite.DB, string) {
	t.Helper()
	oldC, oldI := sqlite.CheckpointCommits, sqlite.CheckpointInterval
	sqlite.CheckpointCommits, sqlite.CheckpointInterval = commits, interval
	t.Cleanup(func() { sqlite.CheckpointCommits, sqlite.CheckpointInterval = oldC, oldI })
	path := filepath.Join(t.TempDir(), "warp.db")
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

// writePages commits n write transactions of a few pages each.
func writePages(t *testing.T, db *sqlite.DB, n int) {
	t.Helper()
	big := strings.Repeat("x", 6000)
	for i := range n {
		err := db.Update(context.Background(), func(tx warp.Tx) error {
			return tx.SetMeta(context.Background(), fmt.Sprintf("k%d", i%50), big+fmt.Sprint(i))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// walFrames runs a PASSIVE checkpoint on a connection of the test's own
// and returns the WAL's frames and how many of them are in the database
// file.
func walFrames(t *testing.T, path string) (log, done int64) {
	t.Helper()
	c, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var busy int64
	if err := c.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &done); err != nil {
		t.Fatal(err)
	}
	return log, done
}

// TestWriterLeavesCheckpointsToTheCheckpointer: commits do not checkpoint
// the WAL themselves past 1,000 pages (SQLite's default) — with the
// checkpointer idle the WAL keeps every frame — but do past
// WriterCheckpointPages, the backstop.
func TestWriterLeavesCheckpointsToTheCheckpointer(t *testing.T) {
	db, path := openCheckpointing(t, 1<<40, time.Hour)
	writePages(t, db, 600)
	if n, _ := db.Checkpoints(); n != 0 {
		t.Fatalf("%d checkpoints with the checkpointer idle", n)
	}
	log, _ := walFrames(t, path)
	if log <= 1000 {
		t.Fatalf("the WAL holds %d frames after 600 commits of ~2 pages, want more than 1,000: something checkpointed it", log)
	}
	// Past the backstop the writer checkpoints and starts the WAL over:
	// the file (which keeps its largest size) stays near that many
	// frames, where 16,000 more commits of at least a page would make it
	// half as large again.
	writePages(t, db, 16_000)
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	const frame = 24 + 4096
	if max := int64(sqlite.WriterCheckpointPages+200) * frame; fi.Size() > max {
		t.Fatalf("the WAL file is %d bytes (%d frames), want at most ~%d frames: the writer never checkpointed", fi.Size(), fi.Size()/frame, sqlite.WriterCheckpointPages)
	}
}

// unbrokenHeartbeats opens a store over 20,000 held leases (~1,700
// pages) whose checkpointer runs every 16 commits and restarts the WAL
// past 2,000 frames, its WAL emptied after the leases' insert (the file
// keeps its largest size); beat then sends heartbeats from 32 clients,
// leases in random order, so the group commit's batches run back to back
// and each heartbeat writes ~3 pages no other in its batch shares.
func unbrokenHeartbeats(t *testing.T) (db *sqlite.DB, beat func(each int)) {
	t.Helper()
	old := sqlite.RestartFrames
	sqlite.RestartFrames = 2_000
	t.Cleanup(func() { sqlite.RestartFrames = old })
	db, _ = openCheckpointing(t, 16, time.Hour)
	clock := storetest.NewClock(storetest.T0())
	svc, err := warp.NewService(db, warp.Config{Policy: storetest.Policy(), Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := svc.Init(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	const leases, clients = 20_000, 32
	if err := db.BulkInsertLeases(ctx, leases, 0, clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := db.Exec(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	round := 0
	return db, func(each int) {
		t.Helper()
		round++
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for c := range clients {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(c), uint64(round)))
				for range each {
					id := fmt.Sprintf("B-%07d", r.IntN(leases)+1)
					if _, err := svc.Heartbeat(ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: id, Epoch: 1, Host: "h", ActivityAge: 3}); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if n, lastErr := db.Checkpoints(); lastErr != "" || n == 0 {
			t.Fatalf("%d checkpoints, last error %q", n, lastErr)
		}
	}
}

// walFileFrames is the size of path's WAL file, in frames.
func walFileFrames(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	const frame = 24 + 4096
	return fi.Size() / frame
}

// TestCheckpointerStartsTheWALOver: under heartbeats that never pause no
// pass ends between two batches, so SQLite never starts the WAL over by
// itself; the checkpointer's restart does. How large the WAL file grows
// meanwhile depends on how soon the checkpointer gets a CPU: on a quiet
// machine well under the writer's backstop at WriterCheckpointPages, on
// a starved one (a CI run beside npm installs) 57,667 frames were seen,
// so the size is logged, not judged.
func TestCheckpointerStartsTheWALOver(t *testing.T) {
	db, beat := unbrokenHeartbeats(t)
	beat(750) // 24,000 heartbeats: several backstops' worth of frames
	held, restarted := db.WALRestarts()
	t.Logf("frames %d, writer held %d times, %d restarts", walFileFrames(t, db.Path()), held, restarted)
	if restarted == 0 {
		t.Fatalf("the checkpointer never started the WAL over (%d passes with the writer held)", held)
	}
}

// TestCheckpointerLeavesTheWriterWhileAReaderPinsTheWAL: while another
// connection's read transaction keeps its snapshot (a backup, say), no
// pass can copy every frame, so the checkpointer does not hold the writer
// for one (without the check it did, tried); once the reader ends, it
// starts the WAL over again.
func TestCheckpointerLeavesTheWriterWhileAReaderPinsTheWAL(t *testing.T) {
	db, beat := unbrokenHeartbeats(t)
	reader, err := sql.Open("sqlite", "file:"+db.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	rtx, err := reader.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := rtx.QueryRow("SELECT count(*) FROM leases").Scan(&n); err != nil {
		t.Fatal(err)
	}
	beat(250)
	if held, restarted := db.WALRestarts(); held != 0 || restarted != 0 {
		t.Fatalf("with a reader pinning the WAL the writer was held %d times (%d restarts), want none", held, restarted)
	}
	if err := rtx.Rollback(); err != nil {
		t.Fatal(err)
	}
	beat(500)
	if _, restarted := db.WALRestarts(); restarted == 0 {
		t.Fatal("the checkpointer did not start the WAL over once the reader ended")
	}
}

// TestCheckpointerRuns: the checkpointer checkpoints after
// CheckpointCommits commits, and CheckpointInterval after a commit when
// fewer came.
func TestCheckpointerRuns(t *testing.T) {
	waitCheckpoints := func(t *testing.T, db *sqlite.DB, n int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, lastErr := db.Checkpoints()
			if lastErr != "" {
				t.Fatalf("checkpointer: %s", lastErr)
			}
			if got >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d checkpoints after 10s, want %d", got, n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	t.Run("commits", func(t *testing.T) {
		db, _ := openCheckpointing(t, 20, time.Hour)
		writePages(t, db, 20)
		waitCheckpoints(t, db, 1)
	})
	t.Run("interval", func(t *testing.T) {
		db, _ := openCheckpointing(t, 1<<40, 20*time.Millisecond)
		writePages(t, db, 3)
		waitCheckpoints(t, db, 1)
	})
}
