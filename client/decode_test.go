package client_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/client"
)

func TestDecode(t *testing.T) {
	var out client.HeartbeatResponse
	if err := client.Decode("POST", "/v1/heartbeat", 200, []byte(`{"ticket":"T-1","epoch":3,"extended":true}`), &out); err != nil ||
		out.Ticket != "T-1" || out.Epoch != 3 || !out.Extended {
		t.Fatalf("200: got %+v, %v", out, err)
	}
	if err := client.Decode("POST", "/v1/heartbeat", 200, []byte(`{"ticket":`), &out); err == nil ||
		!strings.Contains(err.Error(), "POST /v1/heartbeat: decode answer") {
		t.Errorf("torn 200 body: got %v, want a decode error naming the request", err)
	}
	if err := client.Decode("GET", "/healthz", 200, []byte(`not json`), nil); err != nil {
		t.Errorf("200 with no result wanted: got %v", err)
	}

	err := client.Decode("POST", "/v1/heartbeat", 410,
		[]byte(`{"error":{"code":"lease_ended","message":"the lease lapsed","detail":{"lease_state":"lapsed"}}}`), &out)
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || !errors.Is(err, client.ErrLeaseEnded) || apiErr.Status != 410 ||
		apiErr.DetailValue(client.DetailLeaseState) != client.LeaseLapsed {
		t.Errorf("410 with an error body: got %#v", err)
	}

	// An answer without an error body (a proxy's page): the code is the
	// best guess from the status, the message quotes the body, clipped.
	err = client.Decode("POST", "/v1/heartbeat", 503, []byte("<html>"+strings.Repeat("x", 500)+"</html>"), &out)
	if !errors.As(err, &apiErr) || apiErr.Code != client.CodeUnavailable || !errors.Is(err, client.ErrUnavailable) ||
		!strings.HasPrefix(apiErr.Message, "POST /v1/heartbeat: <html>") || len(apiErr.Message) > 250 {
		t.Errorf("503 without an error body: got %#v", err)
	}
	err = client.Decode("GET", "/x", 418, nil, nil)
	if !errors.As(err, &apiErr) || apiErr.Code != client.CodeInternal || errors.Unwrap(err) != nil {
		t.Errorf("418 without a body: got %#v, want code internal with no error value", err)
	}
}
