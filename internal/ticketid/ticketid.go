// Package ticketid holds the ticket id rule, alone: the hook's code path
// (gyrum-hook, internal/gyrumdir) needs the rule but not the domain
// package, whose imports would slow every hook start. internal/warp
// re-exports it as warp.ValidTicketID.
package ticketid

// Valid reports whether id obeys the ticket id rule
// ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$. It is written out rather than a
// regexp because the hook binary imports it and a regexp costs its compile
// at every process start.
func Valid(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}
