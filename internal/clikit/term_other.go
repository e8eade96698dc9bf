//go:build !unix

package clikit

import "io"

// TerminalSize reports no terminal where warp does not know how to ask:
// --watch then prints changes as lines.
func TerminalSize(w io.Writer) (cols, rows int, ok bool) { return 0, 0, false }
