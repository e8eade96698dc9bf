//go:build linux && (amd64 || arm64) && !race

package quiet

// raceEnabled: reads and writes are raw calls (bufCall).
const raceEnabled = false
