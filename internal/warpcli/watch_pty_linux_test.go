package warpcli_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal of rows × cols: the side a program
// writes to (a terminal) and the side that reads what it wrote.
func openPTY(t *testing.T, rows, cols uint16) (term, reader *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Skipf("unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Skipf("name the pseudo-terminal: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("open the pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return s, m
}

var escapes = regexp.MustCompile(`\x1b\[[0-9?]*[A-Za-z]`)

// frames splits what a terminal got into the frames the watch drew (each
// starts by sending the cursor home), without control sequences and line
// ends.
func frames(out string) [][]string {
	var fs [][]string
	for _, f := range strings.Split(out, "\x1b[H")[1:] {
		f = strings.ReplaceAll(escapes.ReplaceAllString(f, ""), "\r", "")
		fs = append(fs, strings.Split(strings.TrimSuffix(f, "\n"), "\n"))
	}
	return fs
}

// On a terminal the watch draws the table in place: the screen is cleared
// once, each later frame overwrites the last from the top, lines do not
// wrap, a table taller than the terminal is cut with a line that says so,
// and leaving restores the cursor and wrapping below the last frame.
func TestTicketListWatchRedrawsInPlaceOnATerminal(t *testing.T) {
	s := startServer(t, nil)
	s.run(t, nil, "ticket", "create", "T-0", "--title", "already claimed").mustSucceed(t)
	s.claim(t, "T-0", "h0")

	term, reader := openPTY(t, 10, 160)
	w := startWatch(t, map[string]string{"WARP_URL": s.URL(), "WARP_TOKEN": adminToken, "TERM": "xterm"}, s.clock.Now, term)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := reader.Read(buf)
			w.out.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	out := w.until(t, "the first frame", func(out string) bool { return strings.Contains(out, "T-0") && strings.Contains(out, "\x1b[J") })
	if !strings.HasPrefix(out, "\x1b[?25l\x1b[?7l\x1b[H\x1b[2J") {
		t.Errorf("the first frame begins %q: want the cursor hidden, wrapping off, the screen cleared", out[:min(len(out), 40)])
	}
	first := frames(out)[0]
	if !strings.HasPrefix(first[0], "warp ticket list --watch   "+s.URL()) || !strings.HasSuffix(first[0], "1 ticket, live") ||
		!strings.HasPrefix(first[2], "ID") || !strings.HasPrefix(first[3], "T-0") || len(first) != 4 {
		t.Errorf("first frame:\n%s", strings.Join(first, "\n"))
	}

	// Twelve tickets more: 2 + 1 + 13 lines for a terminal of 10 rows.
	for i := 1; i <= 12; i++ {
		s.run(t, nil, "ticket", "create", fmt.Sprintf("T-%d", i)).mustSucceed(t)
	}
	out = w.until(t, "a frame of 13 tickets", func(out string) bool {
		return strings.Contains(out, "13 tickets, live") && strings.HasSuffix(out, "\x1b[J")
	})
	fs := frames(out)
	last := fs[len(fs)-1]
	if len(last) != 10 || last[9] != "… 7 more tickets: narrow the list with --state, --verdict or --host" || !strings.HasPrefix(last[8], "T-5 ") {
		t.Errorf("last frame (%d lines):\n%s\nwant 9 lines of the table and one saying 7 more", len(last), strings.Join(last, "\n"))
	}
	if n := strings.Count(out, "\x1b[2J"); n != 1 {
		t.Errorf("the screen was cleared %d times, want once (frames overwrite each other)", n)
	}
	w.stop(t)
	out = w.until(t, "the terminal restored", func(out string) bool { return strings.HasSuffix(out, "\x1b[?7h\x1b[?25h") })
	if !strings.HasSuffix(out, "\x1b[J\r\n\x1b[?7h\x1b[?25h") {
		t.Errorf("the watch ended with %q: want the cursor below the frame, wrapping and cursor back", out[max(0, len(out)-40):])
	}
	if e := w.errb.String(); e != "" {
		t.Errorf("stderr %q", e)
	}
}
