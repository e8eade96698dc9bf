package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
)

// streamServer answers GET /v1/events/stream with serve, after checking
// what the client sent.
func streamServer(t *testing.T, serve func(w http.ResponseWriter, r *http.Request)) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != client.StreamPath {
			t.Errorf("got %s %s, want GET %s", r.Method, r.URL.Path, client.StreamPath)
		}
		if got := r.Header.Get("Accept"); got != "text/event-stream" {
			t.Errorf("Accept %q, want text/event-stream", got)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer admin-tok" {
			t.Errorf("Authorization %q, want the client's token", got)
		}
		serve(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// sseHeaders starts an event stream answer.
func sseHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
}

func write(w http.ResponseWriter, s string) {
	io.WriteString(w, s)
	w.(http.Flusher).Flush()
}

// messages reads every message of s until it ends, and the error it ended on.
func messages(s *client.Stream) ([]client.StreamMessage, error) {
	var out []client.StreamMessage
	for {
		m, err := s.Next()
		if err != nil {
			return out, err
		}
		out = append(out, m)
	}
}

// The reader follows the event stream format, not only the lines warp
// writes: any of the three line ends, data over several lines, comments,
// fields without a value, events of other types and events without data
// (skipped), retry: with digits only, an unfinished last event (dropped).
func TestStreamReadsTheEventStreamFormat(t *testing.T) {
	srv := streamServer(t, func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		write(w, "retry: 2000\nevent: hello\ndata: {\"kind\":\"hello\",\"now\":1}\n\n")
		write(w, ": ping\n\n")
		write(w, "retry: 2s\r\n")   // not digits: ignored
		write(w, "retry: +300\r\n") // neither
		write(w, "event: update\r\ndata: {\"kind\":\"created\",\r\ndata:\"id\":\"T-1\",\r\n")
		write(w, "data: \"ticket\":{\"id\":\"T-1\",\"title\":\"a: b\",\"state\":\"open\",\"epoch\":0,\"schema_version\":0},\"now\":2}\r\n\r\n")
		write(w, "event: other\ndata: {\"kind\":\"skipped\",\"now\":3}\n\n")
		write(w, "event: update\n\n") // no data: no event
		write(w, "event: update\rdata: {\"kind\":\"lapsed\",\"id\":\"T-1\",\"reason\":\"no-activity\",\"fallback_extended\":true,\"now\":4}\r\r")
		write(w, "retry: 1500\n")
		write(w, "event: update\ndata: {\"kind\":\"cut-off\",\"now\":5}\n") // the server stops before its end
	})
	s, err := client.NewClient(srv.URL, "admin-tok").Stream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := messages(s)
	if err != io.EOF {
		t.Errorf("the stream ended with %v, want io.EOF", err)
	}
	var kinds []string
	for _, m := range got {
		kinds = append(kinds, m.Kind)
	}
	if strings.Join(kinds, " ") != "hello created lapsed" {
		t.Fatalf("kinds %v, want hello created lapsed", kinds)
	}
	if c := got[1]; c.ID != "T-1" || c.Ticket == nil || c.Ticket.Title != "a: b" || c.Ticket.State != "open" || c.Now != 2 {
		t.Errorf("created %+v (ticket %+v)", c, c.Ticket)
	}
	if l := got[2]; l.Reason != "no-activity" || !l.FallbackExtended || l.Ticket != nil {
		t.Errorf("lapsed %+v", l)
	}
	if s.Retry() != 1500*time.Millisecond {
		t.Errorf("Retry %s, want 1.5s (the last valid retry:)", s.Retry())
	}
	if _, err := s.Next(); err != io.EOF {
		t.Errorf("Next after the end: %v, want io.EOF again", err)
	}
}

// A refusal reads as every call's does; an answer that is not an event
// stream (another server at the URL) is an error that says so.
func TestStreamRefusals(t *testing.T) {
	for name, c := range map[string]struct {
		serve func(w http.ResponseWriter)
		check func(err error) bool
	}{
		"401": {
			func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, `{"error":{"code":"unauthorized","message":"missing or unknown bearer token"}}`)
			},
			func(err error) bool {
				var ae *client.APIError
				return errors.Is(err, client.ErrUnauthorized) && errors.As(err, &ae) && ae.Status == 401 && !ae.Guessed
			},
		},
		"503 while the server stops": {
			func(w http.ResponseWriter) {
				http.Error(w, "event stream closed: the server is stopping", http.StatusServiceUnavailable)
			},
			func(err error) bool {
				var ae *client.APIError
				return errors.As(err, &ae) && ae.Guessed && errors.Is(err, client.ErrUnavailable)
			},
		},
		"JSON, not a stream": {
			func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{}`)
			},
			func(err error) bool { return err != nil && strings.Contains(err.Error(), "not text/event-stream") },
		},
	} {
		srv := streamServer(t, func(w http.ResponseWriter, r *http.Request) { c.serve(w) })
		s, err := client.NewClient(srv.URL, "admin-tok").Stream(context.Background())
		if s != nil || !c.check(err) {
			t.Errorf("%s: got stream %v, error %v", name, s, err)
		}
	}
}

// The client's timeout bounds the wait for the answer and the silence
// between two lines, never the stream's length: pings keep a stream open
// for longer than the timeout, a silence as long ends it.
func TestStreamTimeouts(t *testing.T) {
	const timeout = 200 * time.Millisecond
	release := make(chan struct{})
	defer close(release)
	srv := streamServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("case") {
		case "":
			// Pings every quarter timeout for 3 timeouts, then an event,
			// then silence.
			sseHeaders(w)
			write(w, "event: hello\ndata: {\"kind\":\"hello\",\"now\":1}\n\n")
			for i := 0; i < 12; i++ {
				time.Sleep(timeout / 4)
				write(w, ": ping\n\n")
			}
			write(w, "event: update\ndata: {\"kind\":\"created\",\"id\":\"T-1\",\"now\":2}\n\n")
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	c := client.NewClient(srv.URL, "admin-tok").WithHTTPClient(&http.Client{Timeout: timeout})
	s, err := c.Stream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := messages(s)
	if len(got) != 2 || got[1].Kind != "created" {
		t.Errorf("got %+v before the silence, want hello and created (pings keep the stream open)", got)
	}
	if err == nil || !strings.Contains(err.Error(), "the connection is lost") {
		t.Errorf("a silence longer than the timeout: %v, want the connection lost", err)
	}

	// A server that never answers.
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(silent.Close)
	_, err = client.NewClient(silent.URL, "").WithHTTPClient(&http.Client{Timeout: timeout}).Stream(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no answer within 200ms") {
		t.Errorf("no answer: %v", err)
	}
}

// Close ends a Next that waits, and so does the caller's context, whose
// error Next then returns.
func TestStreamCloseAndCancel(t *testing.T) {
	srv := streamServer(t, func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		write(w, "event: hello\ndata: {\"kind\":\"hello\",\"now\":1}\n\n")
		<-r.Context().Done()
	})
	c := client.NewClient(srv.URL, "admin-tok")
	for _, how := range []string{"Close", "cancel"} {
		ctx, cancel := context.WithCancel(context.Background())
		s, err := c.Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m, err := s.Next(); err != nil || m.Kind != client.StreamHello {
			t.Fatalf("%s: first message %+v, %v", how, m, err)
		}
		done := make(chan error, 1)
		go func() { _, err := s.Next(); done <- err }()
		if how == "Close" {
			s.Close()
		} else {
			cancel()
		}
		select {
		case err := <-done:
			if err == nil || (how == "cancel") != errors.Is(err, context.Canceled) {
				t.Errorf("%s: Next returned %v", how, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: Next still waits", how)
		}
		s.Close()
		cancel()
	}
}
