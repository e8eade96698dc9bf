//go:build !linux

package gyrumdir

// writeSwapped is writeFile without fsync where no exchange of two names
// is available to this package (see swap_linux.go).
func writeSwapped(path, _ string, data []byte) error { return writeFile(path, data, false) }

// readSwapped reads a file writeSwapped writes: readSmall here.
func readSwapped(path string, limit int64) ([]byte, error) { return readSmall(path, limit) }
