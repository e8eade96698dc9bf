//go:build !unix

package warpcli

import "io"

// terminalSize reports no terminal where warp does not know how to ask:
// --watch then prints changes as lines.
func terminalSize(w io.Writer) (cols, rows int, ok bool) { return 0, 0, false }
