//go:build !linux

package proc

// openPidfd returns -1: no pidfd here.
func openPidfd(int) int { return -1 }

func pidfdExited(int) (bool, error) { return false, nil }

func closeFD(int) {}
