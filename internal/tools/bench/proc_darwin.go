package bench

import (
	"errors"
	"time"
)

var errNoProc = errors.New("bench: the loop measurement reads /proc and runs on Linux only")

func cpuTime(pid int, children bool) (time.Duration, error) { return 0, errNoProc }

func rssKiB(pid int) (int64, error) { return 0, errNoProc }

func anonKiB(pid int) (int64, error) { return 0, errNoProc }

func commandCPU(comm string) (time.Duration, error) { return 0, errNoProc }

func dynamicallyLinked(pid int) bool { return false }
