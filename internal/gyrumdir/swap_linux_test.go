package gyrumdir_test

import (
	"os"
	"sync"
	"syscall"
	"testing"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
)

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// TestStateWritesReuseTwoInodes: heartbeat.state is rewritten every tick;
// after the first two writes, the state and its spare trade names and no
// new inode is created (what made a tick cost ~0.5 ms more on ext4).
func TestStateWritesReuseTwoInodes(t *testing.T) {
	d := mustCreate(t)
	for i := range 2 {
		if err := d.WriteState(gyrumdir.LoopState{PID: 1, Posts: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	pair := map[uint64]bool{inode(t, d.File(gyrumdir.StateFile)): true, inode(t, d.File(gyrumdir.StateSpare)): true}
	if len(pair) != 2 {
		t.Fatalf("state and spare share an inode: %v", pair)
	}
	prev := inode(t, d.File(gyrumdir.StateFile))
	for i := 2; i < 6; i++ {
		if err := d.WriteState(gyrumdir.LoopState{PID: 1, Posts: int64(i)}); err != nil {
			t.Fatal(err)
		}
		cur := inode(t, d.File(gyrumdir.StateFile))
		if !pair[cur] || !pair[inode(t, d.File(gyrumdir.StateSpare))] {
			t.Fatalf("write %d made a new inode (%d; the pair is %v)", i, cur, pair)
		}
		if cur == prev {
			t.Fatalf("write %d wrote the state in place (inode %d): a reader could see it half written", i, cur)
		}
		prev = cur
		if st, err := d.ReadState(); err != nil || st.Posts != int64(i) {
			t.Fatalf("write %d: read %+v, %v", i, st, err)
		}
	}
}

// TestStateReadersSeeWholeStates reads heartbeat.state while it is
// rewritten: every read is a whole state, the old or the new.
func TestStateReadersSeeWholeStates(t *testing.T) {
	d := mustCreate(t)
	if err := d.WriteState(gyrumdir.LoopState{PID: 1}); err != nil {
		t.Fatal(err)
	}
	const n = 2000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := d.ReadState(); err != nil {
				t.Errorf("read during rewrites: %v", err)
				return
			}
		}
	})
	for i := range n {
		// Lengths vary, so a torn read would not parse.
		s := gyrumdir.LoopState{PID: 1, Posts: int64(i), LastError: string(make([]byte, i%50))}
		if err := d.WriteState(s); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}

// TestStateSpareOfOtherModeIsTightened: a spare gyrum did not make (a
// repository committed one, 0644) becomes the state with gyrum's 0600;
// spares gyrum made keep it without a chmod per write.
func TestStateSpareOfOtherModeIsTightened(t *testing.T) {
	d := mustCreate(t)
	spare := d.File(gyrumdir.StateSpare)
	if err := os.WriteFile(spare, []byte("committed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(spare, 0o644); err != nil { // whatever the umask
		t.Fatal(err)
	}
	for i := range 3 {
		if err := d.WriteState(gyrumdir.LoopState{PID: 1, Posts: int64(i)}); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{d.File(gyrumdir.StateFile), spare} {
			fi, err := os.Stat(p)
			if err != nil {
				continue // before the second write there is no spare
			}
			if p == spare && i == 0 {
				continue // the old state: not written yet
			}
			if fi.Mode().Perm() != gyrumdir.FilePerm {
				t.Errorf("write %d: %s has mode %v, want %v", i, p, fi.Mode().Perm(), gyrumdir.FilePerm)
			}
		}
	}
	if s, err := d.ReadState(); err != nil || s.Posts != 2 {
		t.Fatalf("state: %+v, %v", s, err)
	}
}
