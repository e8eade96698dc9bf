package bench

import (
	"errors"
	"syscall"
	"time"
)

var errNoProc = errors.New("bench: the loop measurement reads /proc and runs on Linux only")

func cpuTime(pid int, children bool) (time.Duration, error) { return 0, errNoProc }

func rssKiB(pid int) (int64, error) { return 0, errNoProc }

// maxRSSKiB is ru_maxrss in KiB (macOS reports bytes).
func maxRSSKiB(ru *syscall.Rusage) int64 { return ru.Maxrss / 1024 }
