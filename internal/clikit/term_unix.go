//go:build unix

package clikit

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// TerminalSize returns the size of the terminal w writes to, and false
// when w is not a terminal (a file, a pipe, a test's buffer). A terminal
// that reports no size counts as one of 0 × 0.
func TerminalSize(w io.Writer) (cols, rows int, ok bool) {
	f, isFile := w.(*os.File)
	if !isFile {
		return 0, 0, false
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0, false
	}
	return int(ws.Col), int(ws.Row), true
}
