package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"

	"github.com/gyrum-labs/warp/internal/httpkit"
	"github.com/gyrum-labs/warp/internal/warp"
)

// readBody reads at most MaxBodyBytes from r. A longer body is
// ErrBodyTooLarge, whether r is an http.MaxBytesReader or not.
func readBody(r io.Reader) ([]byte, error) { return readBodyInto(nil, r) }

// readBodyInto is readBody reading into buf's capacity (growing it as
// io.ReadAll does).
func readBodyInto(buf []byte, r io.Reader) ([]byte, error) {
	b := buf[:0]
	lr := io.LimitedReader{R: r, N: MaxBodyBytes + 1}
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, fmt.Errorf("%w: the limit is %d bytes", httpkit.ErrBodyTooLarge, MaxBodyBytes)
			}
			return nil, warp.Errorf(warp.ErrInvalid, "read body: %v", err)
		}
	}
	if len(b) > MaxBodyBytes {
		return nil, fmt.Errorf("%w: the limit is %d bytes", httpkit.ErrBodyTooLarge, MaxBodyBytes)
	}
	return b, nil
}

// heartbeatBodies holds the buffers heartbeat bodies are read into: one
// arrives with every heartbeat, a hundred bytes or so, and the decoded
// request copies what it keeps.
var heartbeatBodies = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// errEmptyBody is returned by decodeObject for a body with nothing but
// white space; callers that accept an empty body treat it as {}.
var errEmptyBody = warp.Errorf(warp.ErrInvalid, "empty body: want a JSON object")

// decodeObject decodes b, which must hold exactly one JSON object, into v.
// strict rejects fields v does not have. Errors are ErrInvalid with a
// message naming the field or the offset.
func decodeObject(b []byte, v any, strict bool) error {
	rest := bytes.TrimLeft(b, " \t\r\n")
	if len(rest) == 0 {
		return errEmptyBody
	}
	if rest[0] != '{' {
		return warp.Errorf(warp.ErrInvalid, "body must be a JSON object, got %s at offset %d", describeStart(rest), len(b)-len(rest))
	}
	// The common case, a valid object, costs one json.Unmarshal; any
	// failure is decoded again below for an error that says where.
	if !strict && json.Unmarshal(b, v) == nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	end := int(dec.InputOffset())
	tail := bytes.TrimLeft(b[end:], " \t\r\n")
	if len(tail) > 0 {
		return warp.Errorf(warp.ErrInvalid, "unexpected data after the JSON object at offset %d: send one object per request", len(b)-len(tail))
	}
	return nil
}

func describeStart(b []byte) string {
	switch b[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	if b[0] == '-' || (b[0] >= '0' && b[0] <= '9') {
		return "a number"
	}
	return fmt.Sprintf("%q", truncate(string(b), 16))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// jsonError turns an encoding/json error into an ErrInvalid error that
// says where the body went wrong.
func jsonError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return warp.Errorf(warp.ErrInvalid, "malformed JSON at offset %d: %s", se.Offset, se.Error())
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "(body)"
		}
		return warp.Errorf(warp.ErrInvalid, "field %q: want %s, got JSON %s (offset %d)", field, jsonTypeName(te.Type), te.Value, te.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return warp.Errorf(warp.ErrInvalid, "malformed JSON: the body ends inside the object")
	}
	// encoding/json reports unknown fields as a plain error: `json: unknown field "x"`.
	return warp.Errorf(warp.ErrInvalid, "invalid body: %s", strings.TrimPrefix(err.Error(), "json: "))
}

func jsonTypeName(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return jsonTypeName(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer in range"
	case reflect.Float32, reflect.Float64:
		return "a finite number in range"
	case reflect.Slice, reflect.Array:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(jsonTypeName(t.Elem()), "a "), "an ") + "s"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}

// decodeRequest reads r's body into v, strictly: unknown fields are
// rejected. An empty body decodes as {} when emptyOK.
func decodeRequest(r *http.Request, v any, emptyOK bool) error {
	b, err := readBody(r.Body)
	if err != nil {
		return err
	}
	err = decodeObject(b, v, true)
	if emptyOK && errors.Is(err, errEmptyBody) {
		return nil
	}
	return err
}

// DecodeHeartbeat reads one heartbeat body as POST /heartbeat receives it:
// the v1 shape (`{"ticket":"T-1"}`, no schema_version) or v2.
// Unknown fields are ignored so newer loops can add optional ones; the
// content type is not looked at (curl -d sends form-urlencoded). A v1 body
// keeps ticket, host and agent only; v2 fields in it are ignored. Errors: ErrBodyTooLarge over
// MaxBodyBytes, warp.ErrUnsupportedSchema for a schema_version other than
// 1 and 2, warp.ErrInvalid for anything else; an accepted heartbeat always
// passes warp.ValidateHeartbeat.
func DecodeHeartbeat(r io.Reader) (warp.Heartbeat, error) {
	buf := heartbeatBodies.Get().(*[]byte)
	b, err := readBodyInto(*buf, r)
	if b != nil && cap(b) <= 4096 {
		defer func() { *buf = b[:0]; heartbeatBodies.Put(buf) }()
	}
	if err != nil {
		return warp.Heartbeat{}, err
	}
	var req HeartbeatRequest
	if err := decodeObject(b, &req, false); err != nil {
		if errors.Is(err, errEmptyBody) {
			return warp.Heartbeat{}, warp.Errorf(warp.ErrInvalid, `empty body: want a JSON object like {"ticket":"T-1"}`)
		}
		return warp.Heartbeat{}, err
	}
	h := warp.Heartbeat{SchemaVersion: 1, Ticket: req.Ticket, Host: req.Host, Agent: req.Agent}
	if req.SchemaVersion != nil {
		h.SchemaVersion = *req.SchemaVersion
	}
	switch h.SchemaVersion {
	case 1:
	case 2:
		if req.Epoch == 0 {
			return warp.Heartbeat{}, warp.Errorf(warp.ErrInvalid, "epoch is required in a v2 heartbeat: send the epoch the claim returned")
		}
		if req.ActivityAgeS == nil {
			return warp.Heartbeat{}, warp.Errorf(warp.ErrInvalid, "activity_age_s is required in a v2 heartbeat: seconds since the agent's last activity")
		}
		h.Epoch, h.ActivityAge, h.InFlight, h.Exit = req.Epoch, *req.ActivityAgeS, req.InFlight, req.Exit
		h.HookSeen, h.HookEvents, h.Stale = req.HookSeen, req.HookEvents, req.Stale
		h.Note = req.Note
		if req.NoteAt != nil {
			h.NoteAt = *req.NoteAt
		}
		h.ProgressAge = req.ProgressAgeS
		if req.Loop != nil {
			h.Loop = &warp.Loop{Label: req.Loop.Label, Count: req.Loop.Count, Error: req.Loop.Error}
		}
	default:
		return warp.Heartbeat{}, warp.Errorf(warp.ErrUnsupportedSchema,
			"schema_version %d is not supported: this server speaks 1 and 2 (omit it for 1)", h.SchemaVersion)
	}
	if h.Ticket == "" {
		return warp.Heartbeat{}, warp.Errorf(warp.ErrInvalid, `ticket is required: {"ticket":"T-1"}`)
	}
	if err := warp.ValidateHeartbeat(h); err != nil {
		return warp.Heartbeat{}, err
	}
	return h, nil
}
