package httpkit_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/httpkit"
	"github.com/gyrum-labs/warp/internal/warp"
)

// The public client package keeps its own copy of the error table (it may
// not import the server's): every code the server answers has there the
// same HTTP status and an error value, and an answer without a body is
// read as the same code.
func TestClientTableMatchesServerTable(t *testing.T) {
	codes, statuses := httpkit.Rows()
	if len(codes) == 0 {
		t.Fatal("empty error table")
	}
	for i, code := range codes {
		if got := client.StatusOf(code); got != statuses[i] {
			t.Errorf("code %s: client says status %d, server answers %d", code, got, statuses[i])
		}
		if code != httpkit.CodeInternal && client.ErrorOf(code) == nil {
			t.Errorf("code %s has no public error value in package client", code)
		}
	}
	// An APIError of each domain error's code unwraps to the public value,
	// so a Go client tests answers with errors.Is(err, client.ErrX).
	for _, tc := range []struct {
		domain error
		public error
	}{
		{warp.ErrLeaseEnded, client.ErrLeaseEnded},
		{warp.ErrStaleEpoch, client.ErrStaleEpoch},
		{warp.ErrNotHolder, client.ErrNotHolder},
		{warp.ErrNotFound, client.ErrNotFound},
		{warp.ErrUnsupportedSchema, client.ErrUnsupportedSchema},
		{httpkit.ErrUnauthorized, client.ErrUnauthorized},
	} {
		code, status := httpkit.ErrorStatus(tc.domain)
		err := error(&client.APIError{Status: status, Code: code})
		if !errors.Is(err, tc.public) {
			t.Errorf("%v answered as %s/%d does not unwrap to %v", tc.domain, code, status, tc.public)
		}
	}
	if client.StatusOf("no-such-code") != http.StatusInternalServerError || client.ErrorOf("no-such-code") != nil {
		t.Error("an unknown code is not read as internal")
	}
}
