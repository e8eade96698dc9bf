// Package apiclient holds what the warp and gyrum commands share about the
// warp server they talk to: how an API error reads, which server URLs they
// accept, which errors mean the server could not be reached, and what an
// invalid ticket id is told.
package apiclient

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/ticketid"
)

// Message returns what a command prints of err after "PROG: ": an answer
// of the server as "MESSAGE (HTTP STATUS CODE)", anything else as it is.
func Message(err error) string {
	var ae *client.APIError
	if errors.As(err, &ae) {
		if ae.Guessed {
			// Not warp's error body: another server (or a proxy) answered.
			// Its page is cut to one short line, and the reader is told
			// where to look instead of being shown a page of HTML.
			return fmt.Sprintf("%s (HTTP %d without warp's error body: is the server asked a warp server? check WARP_URL, --url, or the lease's warp_url)", oneLine(ae.Message, 120), ae.Status)
		}
		return fmt.Sprintf("%s (HTTP %d %s)", ae.Message, ae.Status, ae.Code)
	}
	return err.Error()
}

// oneLine is s with every run of white space made one space, cut to at
// most n bytes (on a rune boundary) with "…" when cut.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// ValidURL reports whether u can be a server's URL (WARP_URL, --url): an
// http or https URL with a host.
func ValidURL(u string) bool {
	pu, err := url.Parse(u)
	return err == nil && (pu.Scheme == "http" || pu.Scheme == "https") && pu.Host != ""
}

// Unreachable reports whether err means the request never got an answer:
// a transport error (*url.Error) or a network one (*net.OpError), such as
// a refused connection or an unknown host.
func Unreachable(err error) bool {
	var ue *url.Error
	var ne *net.OpError
	return errors.As(err, &ue) || errors.As(err, &ne)
}

// CheckTicketID returns a usage error, saying what a ticket id is, when id
// is not one (ticketid.Valid); nil otherwise.
func CheckTicketID(id string) error {
	if ticketid.Valid(id) {
		return nil
	}
	return clikit.Usagef("ticket id %q is invalid: want 1-64 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit", id)
}

// Retries is how many times the CLIs send a request warp refused for now
// (429, 503) again; with Retry-After capped at 10 s, a command waits at
// most 30 s more before it reports the refusal.
const Retries = 3

// Retry is the CLIs' retry of refused requests: Retries times, each wait
// said on w ("NAME: the server refused for now (...): retrying in 1s, attempt 2
// of 4").
func Retry(w io.Writer, name string) client.Retry {
	return client.Retry{Max: Retries, Notify: func(err *client.APIError, wait time.Duration, attempt int) {
		fmt.Fprintf(w, "%s: the server refused for now (%s): retrying in %s, attempt %d of %d\n", name, clikit.Clean(Message(err)), wait, attempt, Retries+1)
	}}
}
