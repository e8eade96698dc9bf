package gyrumdir_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/proc"
)

func mustCreate(t testing.TB) gyrumdir.Dir {
	t.Helper()
	d, err := gyrumdir.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func perm(t *testing.T, p string) fs.FileMode {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

var sampleLease = gyrumdir.Lease{Ticket: "T-1", Epoch: 3, WarpURL: "http://127.0.0.1:7077", Agent: "O", Host: "h",
	ClaimedAt: time.Date(2026, 5, 6, 10, 0, 0, 0, time.UTC)}

func TestCreatePermissions(t *testing.T) {
	wt := t.TempDir()
	if err := os.Mkdir(filepath.Join(wt, gyrumdir.DirName), 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := gyrumdir.Create(wt)
	if err != nil {
		t.Fatal(err)
	}
	if got := perm(t, d.Path); got != 0o700 {
		t.Errorf(".gyrum: got %v, want 0700", got)
	}
	if got := perm(t, d.File(gyrumdir.InFlightDir)); got != 0o700 {
		t.Errorf("in-flight: got %v, want 0700", got)
	}
	if err := d.WriteLease(sampleLease); err != nil {
		t.Fatal(err)
	}
	self, _ := proc.Self()
	if err := d.WritePID(gyrumdir.LoopPIDFile, self); err != nil {
		t.Fatal(err)
	}
	if err := d.TouchActivity(time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := d.StartInFlight("toolu_1", "Bash", time.Now()); err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // twice: the second replaces the first
		if err := d.WriteState(gyrumdir.LoopState{PID: i}); err != nil {
			t.Fatal(err)
		}
	}
	lg, err := d.OpenLog(0)
	if err != nil {
		t.Fatal(err)
	}
	lg.Write([]byte("x\n"))
	lg.Close()
	for _, f := range []string{gyrumdir.LeaseFile, gyrumdir.LoopPIDFile, gyrumdir.ActivityFile, gyrumdir.StateFile,
		gyrumdir.LogFile, filepath.Join(gyrumdir.InFlightDir, "toolu_1")} {
		if got := perm(t, d.File(f)); got != 0o600 {
			t.Errorf("%s: got %v, want 0600", f, got)
		}
	}
	// No temp files of the atomic writes are left behind.
	ents, _ := os.ReadDir(d.Path)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("leftover temp file %s", e.Name())
		}
	}
}

func TestCreateNeedsWorktree(t *testing.T) {
	if _, err := gyrumdir.Create(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("Create on a missing worktree succeeded")
	}
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o600)
	if _, err := gyrumdir.Create(f); err == nil {
		t.Fatal("Create on a file succeeded")
	}
	if _, err := gyrumdir.Open(t.TempDir()); !errors.Is(err, gyrumdir.ErrNoDir) {
		t.Fatalf("Open without .gyrum: got %v, want ErrNoDir", err)
	}
}

func TestLeaseRoundTrip(t *testing.T) {
	d := mustCreate(t)
	if _, err := d.ReadLease(); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing lease: got %v, want fs.ErrNotExist", err)
	}
	if d.HasLease() {
		t.Fatal("HasLease before write")
	}
	if err := d.WriteLease(sampleLease); err != nil {
		t.Fatal(err)
	}
	got, err := d.ReadLease()
	if err != nil || got != sampleLease {
		t.Fatalf("got %+v, %v, want %+v", got, err, sampleLease)
	}
	if err := d.RemoveLease(); err != nil || d.HasLease() {
		t.Fatalf("RemoveLease: %v, still there %v", err, d.HasLease())
	}
	if err := d.RemoveLease(); err != nil {
		t.Fatalf("second RemoveLease: %v", err)
	}
}

func TestLeaseCorrupt(t *testing.T) {
	cases := map[string]string{
		"empty":       "",
		"not json":    "ticket=T-1",
		"truncated":   `{"ticket":"T-1","epoch":3,"warp_url":"http://x`,
		"trailing":    `{"ticket":"T-1","epoch":3,"warp_url":"http://x"} junk`,
		"array":       `[1,2]`,
		"bad ticket":  `{"ticket":"../x","epoch":3,"warp_url":"http://x"}`,
		"no epoch":    `{"ticket":"T-1","warp_url":"http://x"}`,
		"neg epoch":   `{"ticket":"T-1","epoch":-1,"warp_url":"http://x"}`,
		"epoch str":   `{"ticket":"T-1","epoch":"3","warp_url":"http://x"}`,
		"no url":      `{"ticket":"T-1","epoch":3}`,
		"ftp url":     `{"ticket":"T-1","epoch":3,"warp_url":"ftp://x"}`,
		"huge":        `{"ticket":"T-1","epoch":3,"warp_url":"http://x","agent":"` + strings.Repeat("a", 70<<10) + `"}`,
		"binary junk": "\x00\xff\xfe",
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			d := mustCreate(t)
			p := d.File(gyrumdir.LeaseFile)
			os.WriteFile(p, []byte(content), 0o600)
			_, err := d.ReadLease()
			if !errors.Is(err, gyrumdir.ErrCorrupt) {
				t.Fatalf("got %v, want ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), p) {
				t.Errorf("error %q does not name the file", err)
			}
			after, _ := os.ReadFile(p)
			if string(after) != content {
				t.Error("reading changed the file")
			}
		})
	}
	d := mustCreate(t)
	if err := d.WriteLease(gyrumdir.Lease{Ticket: "T-1"}); !errors.Is(err, gyrumdir.ErrCorrupt) {
		t.Fatalf("WriteLease of an invalid lease: got %v, want ErrCorrupt", err)
	}
	if d.HasLease() {
		t.Fatal("invalid lease was written")
	}
}

func TestPIDFiles(t *testing.T) {
	d := mustCreate(t)
	id := proc.Identity{PID: 4242, StartTime: 987654}
	if _, err := d.ReadPID(gyrumdir.LoopPIDFile); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: got %v, want fs.ErrNotExist", err)
	}
	if err := d.WritePID(gyrumdir.LoopPIDFile, id); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(d.File(gyrumdir.LoopPIDFile))
	if string(data) != "4242 987654\n" {
		t.Fatalf("file holds %q, want \"4242 987654\\n\"", data)
	}
	if got, err := d.ReadPID(gyrumdir.LoopPIDFile); err != nil || got != id {
		t.Fatalf("got %v, %v, want %v", got, err, id)
	}
	other := proc.Identity{PID: 4242, StartTime: 1}
	if removed, err := d.RemovePIDIf(gyrumdir.LoopPIDFile, other); err != nil || removed {
		t.Fatalf("RemovePIDIf(other): removed %v, %v; want kept", removed, err)
	}
	if removed, err := d.RemovePIDIf(gyrumdir.LoopPIDFile, id); err != nil || !removed {
		t.Fatalf("RemovePIDIf(id): removed %v, %v; want removed", removed, err)
	}
	if removed, err := d.RemovePIDIf(gyrumdir.LoopPIDFile, id); err != nil || removed {
		t.Fatalf("RemovePIDIf on missing: removed %v, %v", removed, err)
	}
	for _, bad := range []string{"", "4242", "4242 x", "x 1", "1 2 3", strings.Repeat("1", 300)} {
		os.WriteFile(d.File(gyrumdir.ParentPIDFile), []byte(bad), 0o600)
		_, err := d.ReadPID(gyrumdir.ParentPIDFile)
		if !errors.Is(err, gyrumdir.ErrCorrupt) {
			t.Errorf("content %q: got %v, want ErrCorrupt", bad, err)
		}
	}
	if err := d.WritePID(gyrumdir.LoopPIDFile, proc.Identity{}); err == nil {
		t.Error("WritePID of pid 0 succeeded")
	}
}

func TestFind(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	wt := filepath.Join(home, "src", "repo")
	sub := filepath.Join(wt, "a", "b")
	os.MkdirAll(sub, 0o755)
	// A .gyrum without lease or pid file ($GYRUM_HOME) is passed over.
	os.MkdirAll(filepath.Join(home, ".gyrum", "run"), 0o700)
	if _, err := gyrumdir.Find(sub); !errors.Is(err, gyrumdir.ErrNoDir) {
		t.Fatalf("before start-work: got %v, want ErrNoDir", err)
	}
	d, err := gyrumdir.Create(wt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gyrumdir.Find(sub); !errors.Is(err, gyrumdir.ErrNoDir) {
		t.Fatalf("empty .gyrum: got %v, want ErrNoDir", err)
	}
	d.WriteLease(sampleLease)
	for _, start := range []string{wt, sub, filepath.Join(wt, "a")} {
		got, err := gyrumdir.Find(start)
		if err != nil || got.Worktree != wt {
			t.Errorf("Find(%s): got %q, %v, want %s", start, got.Worktree, err, wt)
		}
	}
	// A nested worktree wins over the outer one.
	inner := filepath.Join(wt, "a")
	di, _ := gyrumdir.Create(inner)
	di.WritePID(gyrumdir.LoopPIDFile, proc.Identity{PID: 1, StartTime: 1})
	if got, _ := gyrumdir.Find(sub); got.Worktree != inner {
		t.Errorf("nested: got %s, want %s", got.Worktree, inner)
	}
}

func TestMarkerName(t *testing.T) {
	cases := map[string]string{
		"toolu_01ABC":  "toolu_01ABC",
		"a-b.c_d":      "a-b.c_d",
		"":             "unknown",
		"../../etc/pw": "",
		".hidden":      "",
		"a/b":          "",
		"a b":          "",
		"é":            "",
	}
	seen := map[string]string{}
	for in, want := range cases {
		got := gyrumdir.MarkerName(in)
		if want != "" && got != want {
			t.Errorf("MarkerName(%q): got %q, want %q", in, got, want)
		}
		if strings.ContainsAny(got, "/\x00") || strings.HasPrefix(got, ".") || got == "" || len(got) > 100 {
			t.Errorf("MarkerName(%q) = %q is not a safe file name", in, got)
		}
		if prev, dup := seen[got]; dup {
			t.Errorf("MarkerName(%q) and MarkerName(%q) are both %q", in, prev, got)
		}
		seen[got] = in
	}
	long := strings.Repeat("x", 500)
	if a, b := gyrumdir.MarkerName(long), gyrumdir.MarkerName(long+"y"); len(a) > 100 || a == b {
		t.Errorf("long ids: %q and %q", a, b)
	}
	if a, b := gyrumdir.MarkerName("a/b"), gyrumdir.MarkerName("a_b"); a == b {
		t.Errorf("a/b and a_b collide: %q", a)
	}
}

func TestInFlightMarkers(t *testing.T) {
	d := mustCreate(t)
	now := time.Now()
	if err := d.StartInFlight("../evil", "Bash", now); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(d.Path, "evil")); err == nil {
		t.Fatal("marker escaped in-flight/")
	}
	ms, err := d.InFlight()
	if err != nil || len(ms) != 1 || ms[0].Tool != "Bash" {
		t.Fatalf("got %+v, %v, want one Bash marker", ms, err)
	}
	if err := d.EndInFlight("../evil"); err != nil {
		t.Fatal(err)
	}
	if ms, _ := d.InFlight(); len(ms) != 0 {
		t.Fatalf("after end: %+v", ms)
	}
	if err := d.EndInFlight("never-started"); err != nil {
		t.Fatalf("ending an unknown marker: %v", err)
	}
	// in-flight/ removed by hand: StartInFlight recreates it.
	os.RemoveAll(d.File(gyrumdir.InFlightDir))
	if err := d.StartInFlight("x", "Read", now); err != nil {
		t.Fatalf("StartInFlight without in-flight/: %v", err)
	}
}

func setMtime(t *testing.T, p string, at time.Time) {
	t.Helper()
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
}

func TestActivity(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	const cap = time.Hour
	d := mustCreate(t)
	if _, err := d.Activity(now, cap); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no evidence: got %v, want fs.ErrNotExist", err)
	}
	d.TouchActivity(now.Add(-42 * time.Second))
	a, err := d.Activity(now, cap)
	if err != nil || a.Age != 42*time.Second || a.InFlight != "" {
		t.Fatalf("touched 42s ago: got %+v, %v", a, err)
	}
	// A future mtime (clock step) is age 0, never negative.
	d.TouchActivity(now.Add(time.Minute))
	if a, _ := d.Activity(now, cap); a.Age != 0 {
		t.Fatalf("future mtime: got age %v, want 0", a.Age)
	}
	d.TouchActivity(now.Add(-2 * time.Hour))

	// A running tool call younger than the cap: age 0, tool named; the
	// most recent one is reported.
	d.StartInFlight("old", "Bash", now.Add(-30*time.Minute))
	d.StartInFlight("new", "WebFetch", now.Add(-time.Minute))
	a, _ = d.Activity(now, cap)
	if a.Age != 0 || a.InFlight != "WebFetch" || !a.InFlightSince.Equal(now.Add(-time.Minute)) {
		t.Fatalf("in flight: got %+v, want age 0 WebFetch", a)
	}
	// Markers older than the cap no longer count.
	d.EndInFlight("new")
	setMtime(t, d.File(filepath.Join(gyrumdir.InFlightDir, "old")), now.Add(-cap))
	a, _ = d.Activity(now, cap)
	if a.Age != 2*time.Hour || a.InFlight != "" || a.Expired != 1 {
		t.Fatalf("expired marker: got %+v, want age 2h, nothing in flight, 1 expired", a)
	}
	d.EndInFlight("old")

	// A declared wait counts until it ends and never past the cap.
	d.WriteWait(gyrumdir.Wait{Reason: "CI", DeclaredAt: now.Add(-10 * time.Minute), Until: now.Add(10 * time.Minute)})
	a, _ = d.Activity(now, cap)
	if a.Age != 0 || a.InFlight != "wait: CI" {
		t.Fatalf("wait: got %+v, want age 0, wait: CI", a)
	}
	if a, _ := d.Activity(now.Add(11*time.Minute), cap); a.InFlight != "" || a.Age == 0 {
		t.Fatalf("wait ended: got %+v", a)
	}
	d.WriteWait(gyrumdir.Wait{Reason: "long", DeclaredAt: now.Add(-cap - time.Second), Until: now.Add(time.Hour)})
	if a, _ := d.Activity(now, cap); a.InFlight != "" || a.Age == 0 {
		t.Fatalf("wait past the cap: got %+v", a)
	}
	// A corrupt declaration is ignored by Activity and reported by ReadWait.
	os.WriteFile(d.File(gyrumdir.WaitFile), []byte("{"), 0o600)
	if a, err := d.Activity(now, cap); err != nil || a.InFlight != "" {
		t.Fatalf("corrupt wait: got %+v, %v", a, err)
	}
	if _, err := d.ReadWait(); !errors.Is(err, gyrumdir.ErrCorrupt) {
		t.Fatalf("ReadWait corrupt: got %v", err)
	}
	d.RemoveWait()

	// Without last-activity a running tool call is still evidence.
	os.Remove(d.File(gyrumdir.ActivityFile))
	d.StartInFlight("t", "Bash", now)
	if a, err := d.Activity(now, cap); err != nil || a.Age != 0 || a.InFlight != "Bash" {
		t.Fatalf("no last-activity, in flight: got %+v, %v", a, err)
	}
}

func TestWaitValidation(t *testing.T) {
	d := mustCreate(t)
	now := time.Now()
	if err := d.WriteWait(gyrumdir.Wait{Reason: "x", DeclaredAt: now, Until: now}); err == nil {
		t.Fatal("a wait of zero length was written")
	}
	if _, err := d.ReadWait(); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("got %v, want fs.ErrNotExist", err)
	}
}

func TestClear(t *testing.T) {
	d := mustCreate(t)
	d.WriteLease(sampleLease)
	d.WritePID(gyrumdir.LoopPIDFile, proc.Identity{PID: 1, StartTime: 1})
	d.WritePID(gyrumdir.ParentPIDFile, proc.Identity{PID: 1, StartTime: 1})
	d.TouchActivity(time.Now())
	d.StartInFlight("a", "Bash", time.Now())
	d.WriteWait(gyrumdir.Wait{Reason: "x", DeclaredAt: time.Now(), Until: time.Now().Add(time.Hour)})
	d.WriteState(gyrumdir.LoopState{PID: 1})
	// The second copy of the state earlier versions kept: a worktree
	// upgraded under a lease may still hold one.
	if err := os.WriteFile(d.File(".heartbeat.state.spare"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lg, _ := d.OpenLog(0)
	lg.Write([]byte("kept\n"))
	lg.Close()
	if err := d.Clear(); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(d.Path)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "heartbeat.log,in-flight" {
		t.Fatalf("after Clear: %v, want heartbeat.log and in-flight/", names)
	}
	if ms, _ := d.InFlight(); len(ms) != 0 {
		t.Fatalf("markers left: %v", ms)
	}
}

func TestLogRotates(t *testing.T) {
	d := mustCreate(t)
	const max = 1000
	lg, err := d.OpenLog(max)
	if err != nil {
		t.Fatal(err)
	}
	line := bytes.Repeat([]byte("x"), 99)
	line = append(line, '\n')
	for range 100 {
		if n, err := lg.Write(line); err != nil || n != len(line) {
			t.Fatalf("write: %d, %v", n, err)
		}
	}
	huge := bytes.Repeat([]byte("y"), 5000)
	if _, err := lg.Write(huge); err != nil {
		t.Fatal(err)
	}
	lg.Close()
	for _, f := range []string{gyrumdir.LogFile, gyrumdir.LogFile + ".1"} {
		st, err := os.Stat(d.File(f))
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > max {
			t.Errorf("%s is %d bytes, limit %d", f, st.Size(), max)
		}
	}
	// Reopening continues from the current size.
	lg, _ = d.OpenLog(max)
	lg.Write([]byte("z\n"))
	lg.Close()
	if st, _ := os.Stat(d.File(gyrumdir.LogFile)); st.Size() > max {
		t.Errorf("after reopen: %d bytes", st.Size())
	}
}

func TestRegistry(t *testing.T) {
	home := t.TempDir()
	r := gyrumdir.NewRegistry(home)
	if es, bad, err := r.List(); err != nil || len(es) != 0 || len(bad) != 0 {
		t.Fatalf("missing dir: %v %v %v", es, bad, err)
	}
	a := gyrumdir.Entry{PID: 11, StartTime: 5, Dir: "/w/a", Ticket: "T-1"}
	b := gyrumdir.Entry{PID: 7, StartTime: 9, Dir: "/w/b", Ticket: "T-2"}
	for _, e := range []gyrumdir.Entry{a, b} {
		if err := r.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	if got := perm(t, r.Dir()); got != 0o700 {
		t.Errorf("run/: got %v, want 0700", got)
	}
	if got := perm(t, filepath.Join(r.Dir(), "11.json")); got != 0o600 {
		t.Errorf("entry: got %v, want 0600", got)
	}
	data, _ := os.ReadFile(filepath.Join(r.Dir(), "11.json"))
	if strings.TrimSpace(string(data)) != `{"pid":11,"start_time":5,"dir":"/w/a","ticket":"T-1"}` {
		t.Errorf("entry file holds %s", data)
	}
	// Corrupt entries are reported, not fatal.
	os.WriteFile(filepath.Join(r.Dir(), "13.json"), []byte("{not json"), 0o600)
	os.WriteFile(filepath.Join(r.Dir(), "14.json"), []byte(`{"pid":99,"dir":"/x"}`), 0o600)
	os.WriteFile(filepath.Join(r.Dir(), "notes.txt"), []byte("x"), 0o600)
	es, bad, err := r.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0] != b || es[1] != a {
		t.Fatalf("entries: got %+v, want [b a]", es)
	}
	if len(bad) != 3 {
		t.Fatalf("bad entries: got %+v, want 3", bad)
	}
	for _, be := range bad {
		if !errors.Is(be.Err, gyrumdir.ErrCorrupt) || !strings.Contains(be.Err.Error(), be.Path) {
			t.Errorf("bad entry %s: %v", be.Path, be.Err)
		}
	}
	// Remove only removes the entry of the same identity.
	if removed, err := r.Remove(proc.Identity{PID: 11, StartTime: 6}); err != nil || removed {
		t.Fatalf("Remove with another start time: %v %v", removed, err)
	}
	if removed, err := r.Remove(a.Identity()); err != nil || !removed {
		t.Fatalf("Remove: %v %v", removed, err)
	}
	if _, err := r.Read(11); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after Remove: %v", err)
	}
	// A corrupt entry names no identity: Remove takes it whatever the
	// start time asked for.
	if removed, err := r.Remove(proc.Identity{PID: 13}); err != nil || !removed {
		t.Fatalf("Remove of a corrupt entry: %v %v", removed, err)
	}
	if removed, err := r.Remove(proc.Identity{PID: 13}); err != nil || removed {
		t.Fatalf("Remove twice: %v %v", removed, err)
	}
}

func TestHome(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if h, err := gyrumdir.Home(env(map[string]string{"GYRUM_HOME": "/g", "HOME": "/h"})); err != nil || h != "/g" {
		t.Errorf("GYRUM_HOME: got %q, %v", h, err)
	}
	if h, err := gyrumdir.Home(env(map[string]string{"HOME": "/h"})); err != nil || h != "/h/.gyrum" {
		t.Errorf("HOME: got %q, %v", h, err)
	}
}

func TestStateRoundTrip(t *testing.T) {
	d := mustCreate(t)
	if _, err := d.ReadState(); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
	s := gyrumdir.LoopState{PID: 5, StartTime: 6, SchemaVersion: 2, LastOutcome: "ok", Posts: 3,
		LastPOSTAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if err := d.WriteState(s); err != nil {
		t.Fatal(err)
	}
	got, err := d.ReadState()
	if err != nil || got != s {
		t.Fatalf("got %+v, %v", got, err)
	}
	for i := range 3 {
		s.Posts = int64(10 + i)
		s.LastOutcome = strings.Repeat("x", 10-3*i) // shorter each time: no old tail may remain
		if err := d.WriteState(s); err != nil {
			t.Fatal(err)
		}
		if got, err := d.ReadState(); err != nil || got != s {
			t.Fatalf("write %d: got %+v, %v; want %+v", i, got, err, s)
		}
	}
	os.WriteFile(d.File(gyrumdir.StateFile), []byte("nope"), 0o600)
	if _, err := d.ReadState(); !errors.Is(err, gyrumdir.ErrCorrupt) {
		t.Fatalf("corrupt: %v", err)
	}
}

// TestStateReadersSeeWholeStates reads heartbeat.state while it is
// rewritten: every read is a whole state, the old or the new.
func TestStateReadersSeeWholeStates(t *testing.T) {
	d := mustCreate(t)
	if err := d.WriteState(gyrumdir.LoopState{PID: 1}); err != nil {
		t.Fatal(err)
	}
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
	for i := range 2000 {
		// Lengths vary, so a torn read would not parse.
		s := gyrumdir.LoopState{PID: 1, Posts: int64(i), LastError: string(make([]byte, i%50))}
		if err := d.WriteState(s); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}

func TestReadOnlyWorktree(t *testing.T) {
	if os.Geteuid() == 0 {
		// Root ignores permissions (and CI runs as root): the test runs
		// again as nobody, in a copy of this binary nobody may execute.
		asNobody(t, "TestReadOnlyWorktree")
		return
	}
	d := mustCreate(t)
	os.Chmod(d.Path, 0o500)
	t.Cleanup(func() { os.Chmod(d.Path, 0o700) })
	if err := d.WriteLease(sampleLease); err == nil {
		t.Fatal("WriteLease in a read-only .gyrum succeeded")
	}
	if err := d.TouchActivity(time.Now()); err == nil {
		t.Fatal("TouchActivity in a read-only .gyrum succeeded")
	}
}

func TestSamePath(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{real, real + "/", true},
		{link, real, true},
		{filepath.Join(link, "."), real, true},
		{real, other, false},
		{link, other, false},
		{"/no/such/dir", "/no/such/dir", true},
		{"/no/such/dir", real, false},
	} {
		if got := gyrumdir.SamePath(c.a, c.b); got != c.want {
			t.Errorf("SamePath(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// asNobody runs test name of this test binary as the user nobody (uid and
// gid 65534) and fails when it fails. The binary is copied where nobody
// can run it; nobody's temporary directories go under /tmp.
func asNobody(t *testing.T, name string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "as-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "test")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run", "^"+name+"$", "-test.count", "1", "-test.v")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=/tmp"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+name) {
		t.Fatalf("%s as nobody: %v\n%s", name, err, out)
	}
}

// A worktree recorded through a link is found by its real path too, and
// listed once, by the path start-work was given. Eight of them: the two
// entries of one are listed in their hashes' order, so each pair has
// even odds of putting the real path first.
func TestPreparedThroughALink(t *testing.T) {
	p := gyrumdir.NewPrepared(t.TempDir())
	var links, reals []string
	for range 8 {
		real := t.TempDir()
		link := filepath.Join(t.TempDir(), "link")
		if err := os.Symlink(real, link); err != nil {
			t.Fatal(err)
		}
		if err := p.Add(link); err != nil {
			t.Fatal(err)
		}
		if !p.Has(link) || !p.Has(real) {
			t.Errorf("Has(link) %v, Has(real) %v: want both", p.Has(link), p.Has(real))
		}
		links, reals = append(links, link), append(reals, real)
	}
	got, err := p.List()
	slices.Sort(got)
	want := slices.Sorted(slices.Values(links))
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("List = %q, %v; want the links %q", got, err, want)
	}
	if err := p.Remove(reals[0]); err != nil {
		t.Fatal(err)
	}
	if p.Has(links[0]) || p.Has(reals[0]) {
		t.Error("Remove by the real path left an entry")
	}
}

func TestMarkerToolUseID(t *testing.T) {
	d := mustCreate(t)
	ids := map[string]string{
		"toolu_01ABC":            "toolu_01ABC", // Claude Code's ids are their own names
		"call_x-1":               "call_x-1",
		"":                       "", // no id: "unknown"
		"a/b":                    "", // changed by MarkerName: hashed
		strings.Repeat("x", 120): "", // too long: hashed
	}
	for id, want := range ids {
		if err := d.StartInFlight(id, "T", time.Now()); err != nil {
			t.Fatal(err)
		}
		ms, err := d.InFlight()
		if err != nil || len(ms) != 1 {
			t.Fatalf("%q: markers %v, %v", id, ms, err)
		}
		if got := ms[0].ToolUseID(); got != want {
			t.Errorf("ToolUseID of the marker of %q: got %q, want %q", id, got, want)
		}
		if err := d.EndInFlight(id); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTranscriptRecordedOnceAndCleared(t *testing.T) {
	d := mustCreate(t)
	if err := d.RecordTranscript(""); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Transcript(); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("an empty path was recorded: %v", err)
	}
	for _, p := range []string{"/a/s.jsonl", "/b/other.jsonl"} {
		if err := d.RecordTranscript(p); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := d.Transcript(); err != nil || got != "/a/s.jsonl" {
		t.Fatalf("got %q, %v; want the first path", got, err)
	}
	if err := d.Clear(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Transcript(); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after Clear: %v", err)
	}
	// A symlink planted in its place is neither followed nor written.
	target := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(target, []byte("/planted.jsonl"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, d.File(gyrumdir.TranscriptFile)); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Transcript(); err == nil {
		t.Fatalf("read %q through a symlink", got)
	}
	if err := d.RecordTranscript("/a/s.jsonl"); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(target); string(data) != "/planted.jsonl" {
		t.Fatalf("the symlink's target was written: %q", data)
	}
}
