//go:build linux && (amd64 || arm64)

package quiet

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

const raw = true

// atFDCWD is AT_FDCWD as a system call argument (a negative constant
// converts only at run time).
var atFDCWD = func() uintptr { fd := unix.AT_FDCWD; return uintptr(fd) }()

func errnoErr(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// call makes a system call whose arguments are all integers. It must
// never carry a pointer converted to uintptr: call is an ordinary Go
// function, so its prologue can grow (copy) the goroutine's stack after
// the conversion and before the system call, and the kernel would then
// read or write the old stack — memory that may already be another
// goroutine's. A call with a pointer argument is syscall.RawSyscall6
// itself, the conversion written in its argument list: the compiler keeps
// that object alive and in place until the call returns, and RawSyscall6
// (nosplit) cannot move the stack (TestPointerArgumentsSurviveStackGrowth).
func call(trap, a1, a2, a3 uintptr) (uintptr, error) {
	r, _, e := syscall.RawSyscall(trap, a1, a2, a3)
	return r, errnoErr(e)
}

// ret is a raw system call's result as call returns it.
func ret(r, _ uintptr, e syscall.Errno) (uintptr, error) { return r, errnoErr(e) }

// bytePtr is p as a NUL-terminated string for the kernel.
func bytePtr(p string) (*byte, error) { return unix.BytePtrFromString(p) }

// buf is the address of b's first byte (nil for an empty b), to convert
// to uintptr in a system call's argument list.
func buf(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// Open is openat(AT_FDCWD, path, flags, perm).
func Open(path string, flags int, perm uint32) (int, error) {
	p, err := bytePtr(path)
	if err != nil {
		return -1, err
	}
	fd, err := retry(func() (int, error) {
		r, err := ret(syscall.RawSyscall6(unix.SYS_OPENAT, atFDCWD, uintptr(unsafe.Pointer(p)), uintptr(flags), uintptr(perm), 0, 0))
		return int(r), err
	})
	if err != nil {
		return -1, err
	}
	return fd, nil
}

// Read is read(2); a failed read returns 0 bytes.
func Read(fd int, b []byte) (int, error) { return bufCall(unix.SYS_READ, fd, b, 0) }

// Write is write(2); a failed write returns 0 bytes.
func Write(fd int, b []byte) (int, error) { return bufCall(unix.SYS_WRITE, fd, b, 0) }

// Pwrite is pwrite(2).
func Pwrite(fd int, b []byte, off int64) (int, error) { return bufCall(unix.SYS_PWRITE64, fd, b, off) }

// Pread is pread(2); a failed read returns 0 bytes.
func Pread(fd int, b []byte, off int64) (int, error) { return bufCall(unix.SYS_PREAD64, fd, b, off) }

// Close is close(2) (never retried: the descriptor is gone either way).
func Close(fd int) error {
	_, err := call(unix.SYS_CLOSE, uintptr(fd), 0, 0)
	return err
}

// Fstat is fstat(2).
func Fstat(fd int, st *unix.Stat_t) error {
	_, err := ret(syscall.RawSyscall6(unix.SYS_FSTAT, uintptr(fd), uintptr(unsafe.Pointer(st)), 0, 0, 0, 0))
	return err
}

// Fstatat is fstatat(2) (newfstatat).
func Fstatat(dirfd int, path string, st *unix.Stat_t, flags int) error {
	p, err := bytePtr(path)
	if err != nil {
		return err
	}
	_, err = retry(func() (int, error) {
		_, err := ret(syscall.RawSyscall6(unix.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(st)), uintptr(flags), 0, 0))
		return 0, err
	})
	return err
}

// Fchmod is fchmod(2).
func Fchmod(fd int, mode uint32) error {
	_, err := call(unix.SYS_FCHMOD, uintptr(fd), uintptr(mode), 0)
	return err
}

// Ftruncate is ftruncate(2).
func Ftruncate(fd int, size int64) error {
	_, err := retry(func() (int, error) {
		_, err := call(unix.SYS_FTRUNCATE, uintptr(fd), uintptr(size), 0)
		return 0, err
	})
	return err
}

// Flock is flock(2). Only non-blocking requests (LOCK_NB) belong here.
func Flock(fd, how int) error {
	_, err := call(unix.SYS_FLOCK, uintptr(fd), uintptr(how), 0)
	return err
}

// Renameat2 is renameat2(2) between paths relative to the working directory.
func Renameat2(from, to string, flags uint) error {
	f, err := bytePtr(from)
	if err != nil {
		return err
	}
	t, err := bytePtr(to)
	if err != nil {
		return err
	}
	_, err = ret(syscall.RawSyscall6(unix.SYS_RENAMEAT2, atFDCWD, uintptr(unsafe.Pointer(f)), atFDCWD, uintptr(unsafe.Pointer(t)), uintptr(flags), 0))
	return err
}

// PollNow is ppoll(2) of fd for events with a zero timeout: the events
// that are ready (0 for none).
func PollNow(fd int, events int16) (int16, error) {
	pfd := unix.PollFd{Fd: int32(fd), Events: events}
	var ts unix.Timespec
	_, err := retry(func() (int, error) {
		r, err := ret(syscall.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0))
		return int(r), err
	})
	return pfd.Revents, err
}

// Getdents is getdents64(2).
func Getdents(fd int, b []byte) (int, error) { return bufCall(unix.SYS_GETDENTS64, fd, b, 0) }

// bufCall makes a call of the read(2) family — descriptor, buffer,
// length and, for pread and pwrite, an offset (ignored by the others) —
// again after EINTR. A failed call returns 0 bytes.
func bufCall(trap uintptr, fd int, b []byte, off int64) (int, error) {
	if raceEnabled {
		return retry(func() (int, error) { return viaSyscall(trap, fd, b, off) })
	}
	return retry(func() (int, error) {
		r, err := ret(syscall.RawSyscall6(trap, uintptr(fd), uintptr(buf(b)), uintptr(len(b)), uintptr(off), 0, 0))
		if err != nil {
			return 0, err
		}
		return int(r), nil
	})
}

// viaSyscall is bufCall's call made through the syscall package, for the
// race detector: a raw call is invisible to it, while the syscall
// package's reads and writes tell it that a write publishes what came
// before it and a read sees what was published — the same the net
// package's connections tell it. Without that, a handler and a client
// that read its answer through a quiet connection are reported as a race.
func viaSyscall(trap uintptr, fd int, b []byte, off int64) (int, error) {
	var n int
	var err error
	switch trap {
	case unix.SYS_READ:
		n, err = syscall.Read(fd, b)
	case unix.SYS_WRITE:
		n, err = syscall.Write(fd, b)
	case unix.SYS_PREAD64:
		n, err = syscall.Pread(fd, b, off)
	case unix.SYS_PWRITE64:
		n, err = syscall.Pwrite(fd, b, off)
	default:
		n, err = syscall.Getdents(fd, b)
	}
	if err != nil {
		return 0, err
	}
	return n, nil
}
