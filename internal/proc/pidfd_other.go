//go:build !linux

package proc

import "syscall"

// openPidfd returns -1: no pidfd here.
func openPidfd(int) int { return -1 }

func pidfdExited(int) (bool, error) { return false, nil }

func closeFD(int) {}

// pidfdSignal is never called here: openPidfd gives no pidfd.
func pidfdSignal(int, syscall.Signal) error { return syscall.ENOSYS }
