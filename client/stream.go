package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// StreamPath is the route of the event stream (admin): GET it for
// text/event-stream, or read it with Client.Stream.
const StreamPath = "/v1/events/stream"

// Kinds of StreamMessage: StreamHello opens every connection, the others
// say what changed.
const (
	// StreamHello is the first message of every connection: nothing
	// changed; Now is the server's clock.
	StreamHello = "hello"
	// StreamCreated: a ticket was created.
	StreamCreated = "created"
	// StreamClaimed: a ticket was claimed.
	StreamClaimed = "claimed"
	// StreamHeartbeat: a lease's loop sent a heartbeat. The server sends
	// at most one a second per ticket, folding the others into the next.
	StreamHeartbeat = "heartbeat"
	// StreamExitReport: a loop reported its agent gone (Reason is the
	// report's exit).
	StreamExitReport = "exit-report"
	// StreamReleased: a lease was released (Reason is the release's).
	StreamReleased = "released"
	// StreamCompleted: a ticket was completed.
	StreamCompleted = "completed"
	// StreamEdited: an operator changed a ticket's title or labels.
	StreamEdited = "edited"
	// StreamCancelled: an operator cancelled a ticket (Reason is the
	// operator's); a held lease was released.
	StreamCancelled = "cancelled"
	// StreamReopened: an operator reopened a completed or cancelled
	// ticket (Reason is the operator's).
	StreamReopened = "reopened"
	// StreamLapsed: the server expired a lease (Reason is the lapse's,
	// FallbackExtended whether the v1 fallback had kept it longer).
	StreamLapsed = "lapsed"
	// StreamVerdictChanged: a held lease's recorded verdict changed
	// (From and To).
	StreamVerdictChanged = "verdict-changed"
	// StreamModeChanged: the expiry mode changed to To; every held
	// lease's expiry was recomputed. No ticket.
	StreamModeChanged = "mode-changed"
	// StreamHostAlarm: a host alarm was raised (Reason "raised") or
	// cleared (Reason the clearing reason) for the host To. No ticket.
	StreamHostAlarm = "host-alarm"
)

// StreamMessage is the data of one event of the event stream: a change the
// server made, with the ticket as it was when the server sent the message.
// The dashboard's page reads these, and so does `warp ticket list --watch`.
type StreamMessage struct {
	// Kind is StreamHello or what changed (the Stream* kinds).
	Kind string `json:"kind"`
	// Ticket is the changed ticket; nil for messages about no ticket, and
	// when the server could not read the ticket (ID still names it).
	Ticket *StreamTicket `json:"ticket,omitempty"`
	// ID is the changed ticket's id, also when Ticket is nil.
	ID string `json:"id,omitempty"`
	// From and To are a verdict change's verdicts; To is also the new mode
	// of a mode change and the host of a host alarm.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Reason is a lapse's or release's reason, an exit report's exit, or a
	// host alarm's "raised" or clearing reason.
	Reason string `json:"reason,omitempty"`
	// FallbackExtended says, of a lapse, that the v1 fallback had kept the
	// lease alive longer than activity alone would have.
	FallbackExtended bool `json:"fallback_extended,omitempty"`
	// Now is the server's clock (unix ms) when it made the message.
	Now int64 `json:"now"`
}

// UnixMS is t as the event stream carries times: unix milliseconds, 0
// for the zero time.
func UnixMS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// MSTime is the time of the event stream's unix milliseconds ms: the zero
// time for 0.
func MSTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// StreamTicket is a ticket as the event stream carries it: a row of the
// dashboard. Times are unix milliseconds (UnixMS); 0 (absent) when unset.
type StreamTicket struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	State string `json:"state"`
	Epoch int64  `json:"epoch"`
	// Verdict is the held lease's verdict; empty unless the ticket is claimed.
	Verdict string `json:"verdict,omitempty"`
	// Agent, Host, SchemaVersion and InFlight are the latest lease's (held
	// or ended); empty for a ticket never claimed.
	Agent         string `json:"agent,omitempty"`
	Host          string `json:"host,omitempty"`
	SchemaVersion int    `json:"schema_version"`
	InFlight      string `json:"in_flight,omitempty"`
	// HeartbeatAt is the lease's last heartbeat (the claim until one came).
	HeartbeatAt int64 `json:"heartbeat_at,omitempty"`
	// ActivityAt is the lease's progress, what its verdict is judged on:
	// its last activity, and for a lease whose latest heartbeat was v1 (or
	// that has only its claim) the later of activity and heartbeat.
	ActivityAt int64 `json:"activity_at,omitempty"`
	// ExpiresAt is when a held lease lapses unless extended; 0 once ended.
	ExpiresAt int64 `json:"expires_at,omitempty"`
}

// maxStreamLine bounds one line of the event stream (a message is one
// line of data: a row holds at most a few kilobytes).
const maxStreamLine = 1 << 20

// Stream is an open event stream (Client.Stream). Next returns its
// messages in order; Close ends it. Next and Retry are not safe for
// concurrent use; Close may be called from any goroutine, also while Next
// waits.
type Stream struct {
	ctx    context.Context // the caller's
	cancel context.CancelFunc
	body   io.ReadCloser
	lines  *bufio.Scanner
	data   []byte
	retry  time.Duration
	err    error

	// idle bounds the silence between two lines: timer cancels the
	// request once it passed, and sets idled.
	idle   time.Duration
	timer  *time.Timer
	idled  int32
	closed int32
	once   sync.Once
}

// errStreamClosed is what Next returns once Close was called.
var errStreamClosed = errors.New("event stream closed")

// Stream opens the server's event stream, GET /v1/events/stream (admin):
// a first message of kind StreamHello, then one message for each change
// the server makes, until ctx is done, Close is called or the stream ends.
//
// The client's HTTP timeout (30 s from NewClient; the Timeout of the
// http.Client given to WithHTTPClient) does not end the stream: it bounds
// the wait for the answer's headers, and then the silence between two
// lines. warp sends a comment every 15 s on an idle stream, so a stream
// silent for longer has lost its connection, and Next says so. A zero
// Timeout waits for ever.
//
// A refusal is an *APIError, as from every call (errors.Is(err,
// ErrUnauthorized)); an answer that is not an event stream is an error
// too. The stream has no memory: a client that reconnects reads again what
// it shows (ListTickets) and follows the changes from there.
func (c *Client) Stream(ctx context.Context) (*Stream, error) {
	rctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, c.baseURL+StreamPath, nil)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	hc := *c.http
	wait := hc.Timeout
	hc.Timeout = 0 // the stream runs for as long as it is read: wait bounds its silences instead
	var timedOut int32
	var timer *time.Timer
	if wait > 0 {
		timer = time.AfterFunc(wait, func() { atomic.StoreInt32(&timedOut, 1); cancel() })
	}
	resp, err := hc.Do(req)
	if timer != nil {
		timer.Stop()
	}
	if atomic.LoadInt32(&timedOut) == 1 {
		if err == nil {
			resp.Body.Close()
		}
		cancel()
		return nil, fmt.Errorf("GET %s: no answer within %s", StreamPath, wait)
	}
	if err != nil {
		cancel()
		return nil, fmt.Errorf("GET %s: %w", StreamPath, err)
	}
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		cancel()
		if err := Decode(http.MethodGet, StreamPath, resp.StatusCode, data, nil); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("GET %s: answered %d, not an event stream", StreamPath, resp.StatusCode)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("GET %s: the answer is %q, not text/event-stream: is %s a warp server?", StreamPath, resp.Header.Get("Content-Type"), c.baseURL)
	}
	s := &Stream{ctx: ctx, cancel: cancel, body: resp.Body, idle: wait}
	s.lines = bufio.NewScanner(resp.Body)
	s.lines.Buffer(make([]byte, 0, 4096), maxStreamLine)
	s.lines.Split(scanStreamLines)
	if wait > 0 {
		s.timer = time.AfterFunc(wait, func() { atomic.StoreInt32(&s.idled, 1); cancel() })
	}
	return s, nil
}

// Next returns the stream's next message, waiting for it. It returns an
// error once the stream is over, and the same error on every later call:
// io.EOF when the server ended the stream (it stops, or it dropped this
// client for reading too slowly), the context's error when ctx is done, and
// another error when the connection was lost or the stream broke the
// format. Connect again after Retry.
//
// Events of types other than hello and update, whose data warp sends as
// a StreamMessage, are skipped, and so are comments (warp's pings).
func (s *Stream) Next() (StreamMessage, error) {
	if s.err != nil {
		return StreamMessage{}, s.err
	}
	m, err := s.next()
	if err != nil {
		s.err = err
		s.Close()
	}
	return m, err
}

func (s *Stream) next() (StreamMessage, error) {
	var event string
	s.data = s.data[:0]
	hasData := false
	for s.lines.Scan() {
		if s.timer != nil {
			s.timer.Reset(s.idle)
		}
		line := s.lines.Bytes()
		if len(line) == 0 { // the end of an event
			if hasData && (event == "hello" || event == "update") {
				var m StreamMessage
				if err := json.Unmarshal(s.data, &m); err != nil {
					return StreamMessage{}, fmt.Errorf("GET %s: %s event: decode data: %w", StreamPath, event, err)
				}
				return m, nil
			}
			event, s.data, hasData = "", s.data[:0], false
			continue
		}
		if line[0] == ':' { // a comment: warp's ping
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "event":
			event = string(value)
		case "data":
			if hasData {
				s.data = append(s.data, '\n')
			}
			s.data, hasData = append(s.data, value...), true
		case "retry":
			if ms, err := strconv.ParseUint(string(value), 10, 32); err == nil { // digits only, as the format wants
				s.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
	err := s.lines.Err()
	switch {
	case atomic.LoadInt32(&s.closed) == 1:
		return StreamMessage{}, errStreamClosed
	case s.ctx.Err() != nil:
		return StreamMessage{}, s.ctx.Err()
	case atomic.LoadInt32(&s.idled) == 1:
		return StreamMessage{}, fmt.Errorf("GET %s: nothing received for %s (warp pings an idle stream every 15 s): the connection is lost", StreamPath, s.idle)
	case errors.Is(err, bufio.ErrTooLong):
		return StreamMessage{}, fmt.Errorf("GET %s: a line longer than %d bytes: not warp's event stream", StreamPath, maxStreamLine)
	case err != nil:
		return StreamMessage{}, fmt.Errorf("GET %s: %w", StreamPath, err)
	}
	return StreamMessage{}, io.EOF
}

// Retry returns how long the server asks a client to wait before it
// connects again (the stream's retry: field; 2 s from warp), 0 until the
// stream has said.
func (s *Stream) Retry() time.Duration { return s.retry }

// Close ends the stream and releases its connection. It is safe to call
// more than once.
func (s *Stream) Close() error {
	s.once.Do(func() {
		atomic.StoreInt32(&s.closed, 1)
		if s.timer != nil {
			s.timer.Stop()
		}
		s.cancel()
		s.body.Close()
	})
	return nil
}

// scanStreamLines splits an event stream into lines ended by CRLF, LF or
// CR, as the event stream format allows.
func scanStreamLines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		if data[i] == '\n' {
			return i + 1, data[:i], nil
		}
		if i+1 < len(data) {
			if data[i+1] == '\n' {
				return i + 2, data[:i], nil
			}
			return i + 1, data[:i], nil
		}
		if atEOF {
			return i + 1, data[:i], nil
		}
		return 0, nil, nil // a CR at the end: wait for what follows it
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil // a last line without its end: dropped by the caller's parse as an unfinished event
	}
	return 0, nil, nil
}
