//go:build linux && (amd64 || arm64) && race

package quiet

// raceEnabled: reads and writes go through the syscall package, which the
// race detector sees (bufCall).
const raceEnabled = true
