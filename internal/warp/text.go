package warp

import (
	"unicode/utf8"
)

// CheckText is the one rule for every free-text field a client sends
// (title, agent, host, in_flight, reason, pr_url, ...): valid UTF-8, no NUL
// (PostgreSQL's text cannot hold one; SQLite would), at most max bytes.
// The error is ErrInvalid naming the field, the same from both stores.
func CheckText(field, value string, max int) error {
	if len(value) > max {
		return Errorf(ErrInvalid, "%s is %d bytes, at most %d allowed", field, len(value), max)
	}
	if !utf8.ValidString(value) {
		return Errorf(ErrInvalid, "%s is not valid UTF-8", field)
	}
	for i := 0; i < len(value); i++ {
		if value[i] == 0 {
			return Errorf(ErrInvalid, "%s contains a NUL character (\\u0000) at byte %d", field, i)
		}
	}
	return nil
}

// checkTexts applies CheckText to pairs of (field, value) with one bound.
func checkTexts(max int, fieldValues ...string) error {
	for i := 0; i+1 < len(fieldValues); i += 2 {
		if err := CheckText(fieldValues[i], fieldValues[i+1], max); err != nil {
			return err
		}
	}
	return nil
}
