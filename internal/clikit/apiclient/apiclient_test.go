package apiclient_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/clikit/apiclient"
)

func TestMessage(t *testing.T) {
	ae := &client.APIError{Status: 409, Code: client.CodeStaleEpoch, Message: "lease epoch 1 is stale"}
	if got, want := apiclient.Message(fmt.Errorf("release T-1: %w", ae)), "lease epoch 1 is stale (HTTP 409 "+client.CodeStaleEpoch+")"; got != want {
		t.Errorf("Message = %q, want %q", got, want)
	}
	if got := apiclient.Message(errors.New("disk full")); got != "disk full" {
		t.Errorf("Message = %q", got)
	}
}

func TestValidURL(t *testing.T) {
	for u, want := range map[string]bool{
		"http://127.0.0.1:7077":       true,
		"https://warp.internal:7077/": true,
		"ftp://x":                     false,
		"127.0.0.1:7077":              false,
		"http://":                     false,
		"http://%zz":                  false,
		"":                            false,
	} {
		if got := apiclient.ValidURL(u); got != want {
			t.Errorf("ValidURL(%q) = %v, want %v", u, got, want)
		}
	}
}

func TestUnreachable(t *testing.T) {
	// Nothing listens on port 1 of loopback.
	_, err := client.NewClient("http://127.0.0.1:1", "").Mode(context.Background())
	if err == nil || !apiclient.Unreachable(err) {
		t.Errorf("a refused connection: Unreachable(%v) = false", err)
	}
	if apiclient.Unreachable(&client.APIError{Status: http.StatusUnauthorized}) || apiclient.Unreachable(errors.New("x")) {
		t.Error("an answer or a plain error is unreachable")
	}
}

func TestCheckTicketID(t *testing.T) {
	if err := apiclient.CheckTicketID("T-1"); err != nil {
		t.Errorf("T-1: %v", err)
	}
	err := apiclient.CheckTicketID("bad id!")
	var ue *clikit.UsageError
	if !errors.As(err, &ue) || err.Error() != `ticket id "bad id!" is invalid: want 1-64 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit` {
		t.Errorf("bad id!: %v", err)
	}
}
