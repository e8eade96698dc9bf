package httpkit_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/httpkit"
	"github.com/gyrum-labs/warp/internal/warp"
)

// Every error the server answers with reaches a Go client as the public
// error value of the same name: the server's table picks the code, the
// client's gives the status and the value, and an answer built from them
// unwraps to the right one.
func TestServerErrorsReadBackAsTheClientsValues(t *testing.T) {
	for _, tc := range []struct {
		server, public error
	}{
		{warp.ErrInvalid, client.ErrInvalid},
		{warp.ErrUnsupportedSchema, client.ErrUnsupportedSchema},
		{warp.ErrNotFound, client.ErrNotFound},
		{warp.ErrNoOpenTicket, client.ErrNoOpenTicket},
		{warp.ErrConflict, client.ErrConflict},
		{warp.ErrStaleEpoch, client.ErrStaleEpoch},
		{warp.ErrNotHolder, client.ErrNotHolder},
		{warp.ErrTooManyHosts, client.ErrTooManyHosts},
		{warp.ErrLeaseEnded, client.ErrLeaseEnded},
		{warp.ErrAdoptionIncomplete, client.ErrAdoptionIncomplete},
		{warp.ErrUnavailable, client.ErrUnavailable},
		{httpkit.ErrUnauthorized, client.ErrUnauthorized},
		{httpkit.ErrForbidden, client.ErrForbidden},
		{httpkit.ErrBodyTooLarge, client.ErrBodyTooLarge},
		{httpkit.ErrMethodNotAllowed, client.ErrMethodNotAllowed},
	} {
		// Wrapped, as the domain returns them.
		code, status := httpkit.ErrorStatus(fmt.Errorf("claim T-1: %w", warp.Errorf(tc.server, "why")))
		if status == http.StatusInternalServerError {
			t.Errorf("%v: answered as %s/%d, want a row of its own", tc.server, code, status)
		}
		if !errors.Is(&client.APIError{Status: status, Code: code}, tc.public) {
			t.Errorf("%v answered as %s/%d does not unwrap to client's %v", tc.server, code, status, tc.public)
		}
	}
	if code, status := httpkit.ErrorStatus(errors.New("disk on fire")); code != httpkit.CodeInternal || status != http.StatusInternalServerError {
		t.Errorf("an unknown error: got %s/%d, want internal/500", code, status)
	}
}

// Every code of the table is one the public client knows.
func TestEveryCodeIsTheClients(t *testing.T) {
	codes, statuses := httpkit.Rows()
	if len(codes) == 0 {
		t.Fatal("empty error table")
	}
	for i, code := range codes {
		if code == httpkit.CodeInternal {
			continue
		}
		if client.ErrorOf(code) == nil || statuses[i] == http.StatusInternalServerError {
			t.Errorf("code %s (status %d) is unknown to package client", code, statuses[i])
		}
	}
	if client.StatusOf("no-such-code") != http.StatusInternalServerError || client.ErrorOf("no-such-code") != nil {
		t.Error("an unknown code is not read as internal")
	}
}
