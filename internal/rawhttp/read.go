package rawhttp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Limits on what an answer may hold before its body.
const (
	// maxHeaderBytes caps the status lines and header sections of an
	// answer, interim 1xx answers included; the trailers have a cap of
	// their own of the same size.
	maxHeaderBytes = 64 << 10
	// maxHeaderLines caps the lines of one header section or trailer.
	maxHeaderLines = 100
	// maxInterim caps the 1xx answers skipped before the final one.
	maxInterim = 5
)

var (
	errHeaderTooLarge = fmt.Errorf("header section larger than %d bytes", maxHeaderBytes)
	errTooManyLines   = fmt.Errorf("header section of more than %d lines", maxHeaderLines)
)

// headReader reads status lines and header sections from br, counting
// them against the caps.
type headReader struct {
	br   *bufio.Reader
	n    int    // bytes read since the last reset
	long []byte // a line longer than br's buffer

	// buf holds the kept fields' names and values back to back; spans
	// locate them. One string is made of buf at the end.
	buf   []byte
	spans []span
}

type span struct{ k0, k1, v1 int } // name buf[k0:k1], value buf[k1:v1]

// line returns the next line without its line end (CRLF or a lone LF). The
// slice is valid until the next read.
func (h *headReader) line() ([]byte, error) {
	line, err := h.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		h.long = append(h.long[:0], line...)
		for err == bufio.ErrBufferFull {
			if h.n+len(h.long) > maxHeaderBytes {
				return nil, errHeaderTooLarge
			}
			line, err = h.br.ReadSlice('\n')
			h.long = append(h.long, line...)
		}
		line = h.long
	}
	h.n += len(line)
	if h.n > maxHeaderBytes {
		return nil, errHeaderTooLarge
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// readHead reads the final answer's status line and header section,
// skipping 1xx interim answers. The header is returned when keep is set.
func (h *headReader) readHead(keep bool) (status int, reason string, hdr []Header, err error) {
	h.n = 0
	for interim := 0; ; interim++ {
		line, err := h.line()
		if err != nil {
			return 0, "", nil, err
		}
		status, reason, err = parseStatusLine(line)
		if err != nil {
			return 0, "", nil, err
		}
		final := status >= 200
		if hdr, err = h.readFields(keep && final); err != nil {
			return 0, "", nil, err
		}
		switch {
		case final:
			return status, reason, hdr, nil
		case status == 101:
			return 0, "", nil, errors.New("unexpected 101 Switching Protocols")
		case interim == maxInterim:
			return 0, "", nil, fmt.Errorf("more than %d interim 1xx answers", maxInterim)
		}
	}
}

// readFields reads header fields up to the empty line that ends them. It
// returns them when keep is set and discards them otherwise.
func (h *headReader) readFields(keep bool) ([]Header, error) {
	h.buf, h.spans = h.buf[:0], h.spans[:0]
	if keep && h.buf == nil {
		// The header usually came in with the status line: size buf for
		// what is buffered, within reason.
		h.buf = make([]byte, 0, min(max(h.br.Buffered(), 64), 4096))
	}
	for lines := 0; ; lines++ {
		line, err := h.line()
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			break
		}
		if lines == maxHeaderLines {
			return nil, errTooManyLines
		}
		if line[0] == ' ' || line[0] == '\t' {
			// obs-fold: a continuation of the previous field's value,
			// joined with one space (RFC 9112, section 5.2).
			if lines == 0 {
				return nil, fmt.Errorf("malformed header line %s", quote(line))
			}
			if v := trimOWS(line); keep && len(v) > 0 {
				last := &h.spans[len(h.spans)-1]
				if last.v1 > last.k1 {
					h.buf = append(h.buf, ' ')
				}
				h.buf = append(h.buf, v...)
				last.v1 = len(h.buf)
			}
			continue
		}
		i := bytes.IndexByte(line, ':')
		if i <= 0 || !isToken(line[:i]) {
			return nil, fmt.Errorf("malformed header line %s", quote(line))
		}
		if keep {
			k0 := len(h.buf)
			h.buf = append(h.buf, line[:i]...)
			k1 := len(h.buf)
			h.buf = append(h.buf, trimOWS(line[i+1:])...)
			h.spans = append(h.spans, span{k0, k1, len(h.buf)})
		}
	}
	if !keep || len(h.spans) == 0 {
		return nil, nil
	}
	s := string(h.buf)
	hdr := make([]Header, len(h.spans))
	for i, sp := range h.spans {
		hdr[i] = Header{Key: s[sp.k0:sp.k1], Value: s[sp.k1:sp.v1]}
	}
	return hdr, nil
}

// parseStatusLine parses "HTTP/1.x NNN reason"; the reason may be missing.
func parseStatusLine(line []byte) (status int, reason string, err error) {
	ok := len(line) >= 12 && string(line[:7]) == "HTTP/1." && isDigit(line[7]) && line[8] == ' ' &&
		isDigit(line[9]) && isDigit(line[10]) && isDigit(line[11]) && line[9] != '0' &&
		(len(line) == 12 || line[12] == ' ')
	if !ok {
		return 0, "", fmt.Errorf("malformed status line %s", quote(line))
	}
	status = int(line[9]-'0')*100 + int(line[10]-'0')*10 + int(line[11]-'0')
	if len(line) > 13 {
		reason = string(line[13:])
	}
	return status, reason, nil
}

// readResponse reads an answer to a request made with method, its body
// capped at maxBody bytes.
func readResponse(br *bufio.Reader, method string, maxBody int64) (Response, error) {
	var spans [16]span // room for a usual header without allocating
	h := headReader{br: br, spans: spans[:0]}
	status, _, hdr, err := h.readHead(true)
	if err != nil {
		return Response{}, err
	}
	resp := Response{Status: status, Header: hdr}
	if method == "HEAD" || status == 204 || status == 304 {
		return resp, nil
	}
	chunked, err := isChunked(hdr)
	if err != nil {
		return Response{}, err
	}
	switch {
	case chunked:
		resp.Body, err = readChunked(&h, maxBody)
	default:
		var n int64
		if n, err = contentLength(hdr); err != nil {
			return Response{}, err
		}
		if n >= 0 {
			resp.Body, err = readFixed(br, n, maxBody)
		} else {
			resp.Body, err = readToEOF(br, maxBody)
		}
	}
	if err != nil {
		return Response{}, fmt.Errorf("body: %w", err)
	}
	return resp, nil
}

// isChunked reports whether the answer's body is chunked: Transfer-Encoding
// is exactly "chunked". Any other transfer coding is an error.
func isChunked(hdr []Header) (bool, error) {
	var codings []string
	for _, f := range hdr {
		if !strings.EqualFold(f.Key, "Transfer-Encoding") {
			continue
		}
		for c := range strings.SplitSeq(f.Value, ",") {
			if c = strings.TrimSpace(c); c != "" {
				codings = append(codings, c)
			}
		}
	}
	switch {
	case len(codings) == 0:
		return false, nil
	case len(codings) == 1 && strings.EqualFold(codings[0], "chunked"):
		return true, nil
	}
	return false, fmt.Errorf("unsupported Transfer-Encoding %q", strings.Join(codings, ", "))
}

// contentLength returns the answer's Content-Length, -1 when it has none.
// Several fields (or a list in one) must agree.
func contentLength(hdr []Header) (int64, error) {
	n := int64(-1)
	for _, f := range hdr {
		if !strings.EqualFold(f.Key, "Content-Length") {
			continue
		}
		for v := range strings.SplitSeq(f.Value, ",") {
			v = strings.TrimSpace(v)
			m, err := strconv.ParseUint(v, 10, 63)
			if err != nil {
				return 0, fmt.Errorf("invalid Content-Length %q", f.Value)
			}
			if n >= 0 && int64(m) != n {
				return 0, fmt.Errorf("conflicting Content-Length %d and %d", n, m)
			}
			n = int64(m)
		}
	}
	return n, nil
}

func tooLarge(maxBody int64) error {
	return fmt.Errorf("larger than the limit of %d bytes", maxBody)
}

// readFixed reads an n-byte body.
func readFixed(r io.Reader, n, maxBody int64) ([]byte, error) {
	if n > maxBody {
		return nil, fmt.Errorf("Content-Length %d %w", n, tooLarge(maxBody))
	}
	if n == 0 {
		return nil, nil
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b, nil
}

// readToEOF reads a body that ends when the connection does.
func readToEOF(r io.Reader, maxBody int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxBody+1))
	switch {
	case err != nil:
		return nil, err
	case int64(len(b)) > maxBody:
		return nil, tooLarge(maxBody)
	case len(b) == 0:
		return nil, nil
	}
	return b, nil
}

// readChunked reads a chunked body (RFC 9112, section 7.1) and skips its
// trailers.
func readChunked(h *headReader, maxBody int64) ([]byte, error) {
	var b []byte
	for {
		line, err := h.br.ReadSlice('\n')
		switch {
		case err == bufio.ErrBufferFull:
			return nil, errors.New("chunk size line too long")
		case err == io.EOF:
			return nil, io.ErrUnexpectedEOF
		case err != nil:
			return nil, err
		}
		size, err := parseChunkSize(line)
		if err != nil {
			return nil, err
		}
		if size == 0 {
			h.n = 0
			if _, err := h.readFields(false); err != nil {
				return nil, fmt.Errorf("trailer: %w", err)
			}
			if len(b) == 0 {
				return nil, nil
			}
			return b, nil
		}
		if size > maxBody-int64(len(b)) {
			return nil, tooLarge(maxBody)
		}
		n := len(b)
		b = slices.Grow(b, int(size))[:n+int(size)]
		if _, err := io.ReadFull(h.br, b[n:]); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		crlf, err := h.br.Peek(2)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if crlf[0] != '\r' || crlf[1] != '\n' {
			return nil, errors.New("malformed chunk: no CRLF after the data")
		}
		h.br.Discard(2)
	}
}

// parseChunkSize parses "hex-size [; extensions] CRLF".
func parseChunkSize(line []byte) (int64, error) {
	s := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
	if i := bytes.IndexByte(s, ';'); i >= 0 {
		s = s[:i]
	}
	s = bytes.TrimRight(s, " \t")
	if len(s) == 0 || len(s) > 15 {
		return 0, fmt.Errorf("malformed chunk size line %s", quote(line))
	}
	var n int64
	for _, c := range s {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, fmt.Errorf("malformed chunk size line %s", quote(line))
		}
		n = n<<4 | int64(d)
	}
	return n, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// trimOWS trims spaces and tabs at both ends.
func trimOWS(b []byte) []byte { return bytes.Trim(b, " \t") }

// quote quotes b for an error message, cut to a sane length.
func quote(b []byte) string {
	const limit = 64
	if len(b) > limit {
		return strconv.Quote(string(b[:limit])) + "..."
	}
	return strconv.Quote(string(b))
}
