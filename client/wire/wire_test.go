package wire_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/client/wire"
)

func TestDecode(t *testing.T) {
	var out wire.HeartbeatResponse
	if err := wire.Decode("POST", "/v1/heartbeat", 200, []byte(`{"ticket":"T-1","epoch":3,"extended":true}`), &out); err != nil ||
		out.Ticket != "T-1" || out.Epoch != 3 || !out.Extended {
		t.Fatalf("200: got %+v, %v", out, err)
	}
	if err := wire.Decode("POST", "/v1/heartbeat", 200, []byte(`{"ticket":`), &out); err == nil ||
		!strings.Contains(err.Error(), "POST /v1/heartbeat: decode answer") {
		t.Errorf("torn 200 body: got %v, want a decode error naming the request", err)
	}
	if err := wire.Decode("GET", "/healthz", 200, []byte(`not json`), nil); err != nil {
		t.Errorf("200 with no result wanted: got %v", err)
	}

	err := wire.Decode("POST", "/v1/heartbeat", 410,
		[]byte(`{"error":{"code":"lease_ended","message":"the lease lapsed","detail":{"lease_state":"lapsed"}}}`), &out)
	var apiErr *wire.APIError
	if !errors.As(err, &apiErr) || !errors.Is(err, wire.ErrLeaseEnded) || apiErr.Status != 410 ||
		apiErr.DetailValue(wire.DetailLeaseState) != wire.LeaseLapsed {
		t.Errorf("410 with an error body: got %#v", err)
	}

	// An answer without an error body (a proxy's page): the code is the
	// best guess from the status, the message quotes the body, clipped.
	err = wire.Decode("POST", "/v1/heartbeat", 503, []byte("<html>"+strings.Repeat("x", 500)+"</html>"), &out)
	if !errors.As(err, &apiErr) || apiErr.Code != wire.CodeUnavailable || !errors.Is(err, wire.ErrUnavailable) ||
		!strings.HasPrefix(apiErr.Message, "POST /v1/heartbeat: <html>") || len(apiErr.Message) > 250 {
		t.Errorf("503 without an error body: got %#v", err)
	}
	err = wire.Decode("GET", "/x", 418, nil, nil)
	if !errors.As(err, &apiErr) || apiErr.Code != wire.CodeInternal || errors.Unwrap(err) != nil {
		t.Errorf("418 without a body: got %#v, want code internal with no error value", err)
	}
}
