package sim_test

import (
	"bytes"
	"os"
	"strconv"
	"testing"
)

// processesMarked returns the pids of running processes whose environment
// carries the simulator's marker for a run under tmp (WARP_SIM_ROOT=tmp/...):
// every process a run starts has it, the loops included.
func processesMarked(t *testing.T, tmp string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	marker := []byte("WARP_SIM_ROOT=" + tmp)
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue // gone, or not ours
		}
		if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil && bytes.Contains(st, []byte(") Z ")) {
			continue // a zombie is not running
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.HasPrefix(kv, marker) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}
