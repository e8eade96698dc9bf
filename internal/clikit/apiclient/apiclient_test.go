package apiclient_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
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

// An answer without warp's error body (another server at WARP_URL) is one
// short line that says where to look, not the other server's page.
func TestMessageOfAnotherServer(t *testing.T) {
	page := "<!DOCTYPE HTML>\n<html>\n<head><title>Error response</title></head>\n<body>" + strings.Repeat("x", 300) + "</body></html>"
	err := client.Decode(http.MethodGet, "/v1/tickets", 404, []byte(page), nil)
	got := apiclient.Message(err)
	if strings.Contains(got, "\n") || len(got) > 260 || !strings.Contains(got, "is the server asked a warp server?") || !strings.Contains(got, "HTTP 404") {
		t.Errorf("Message = %q", got)
	}
}
