// Package shellquote writes a string as one word of a POSIX shell
// command line, for the commands gyrum writes into files (hook commands,
// crontab lines) and prints for people and agents to run (`gyrum release
// --dir D`).
package shellquote

import "strings"

// Quote returns s as one shell word: unchanged when it holds only
// characters no shell treats specially, else between single quotes, each
// quote inside closing the quoted part, escaped with a backslash, and
// opening the next. The empty string is a pair of single quotes.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@=,", r)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

// Printable reports whether s is valid UTF-8 without control characters:
// a string that reads on one line as it is, quoted or not.
func Printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == '\uFFFD' || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' {
			return false
		}
	}
	return true
}
