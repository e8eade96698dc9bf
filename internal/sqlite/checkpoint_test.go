package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/gyrum-labs/warp/internal/storetest"
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

// TestCheckpointerStartsTheWALOver: under heartbeats that never pause
// (32 clients, the group commit's batches back to back, leases in random
// order) no pass ends between two batches, so SQLite never starts the WAL
// over by itself; the checkpointer's restart does, long before the
// writer's backstop at WriterCheckpointPages. Without the restart the WAL
// file grows to the backstop (tried).
func TestCheckpointerStartsTheWALOver(t *testing.T) {
	old := sqlite.RestartFrames
	sqlite.RestartFrames = 2_000
	t.Cleanup(func() { sqlite.RestartFrames = old })
	db, _ := openCheckpointing(t, 16, time.Hour)
	path := db.Path()
	clock := storetest.NewClock(storetest.T0())
	svc, err := warp.NewService(db, warp.Config{Policy: storetest.Policy(), Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := svc.Init(ctx); err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	// 20,000 leases over ~1,700 pages; a heartbeat writes ~3 of them at
	// random: 24,000 heartbeats write several backstops' worth of frames.
	const leases, clients, each = 20_000, 32, 750
	if err := db.BulkInsertLeases(ctx, leases, 0, clock.Now()); err != nil {
		t.Fatal(err)
	}
	// The file keeps its largest size: start it over empty, after the
	// insert's ~4,000 frames.
	if err := db.Exec(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(c), 7))
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
	if db.WALRestarts() == 0 {
		t.Fatal("the checkpointer never started the WAL over")
	}
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	const frame = 24 + 4096
	t.Logf("frames %d restarts %d", fi.Size()/frame, db.WALRestarts())
	if frames := fi.Size() / frame; frames > sqlite.WriterCheckpointPages*3/4 {
		t.Fatalf("the WAL file grew to %d frames, want well under the writer's backstop at %d", frames, sqlite.WriterCheckpointPages)
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
