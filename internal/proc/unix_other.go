//go:build !linux

package proc

import (
	"errors"
	"runtime"
)

// ErrUnsupported: the call needs Linux's /proc and sock_diag.
var errUnixUnsupported = errors.New("finding a process's environment and Unix-socket clients is not supported on " + runtime.GOOS + " (Linux only)")

// Environ is Linux only.
func Environ(pid int) ([]string, error) { return nil, errUnixUnsupported }

// UnixClients is Linux only.
func UnixClients(server int) ([]int, error) { return nil, errUnixUnsupported }

// ListensRemote is Linux only.
func ListensRemote(pid int) (bool, error) { return false, errUnixUnsupported }
