package gateway

import (
	"compress/gzip"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Streaming defaults (infra/docs/answers.md#large-answers).
const (
	// DefaultStreamAbove: a read's answer that passes this many bytes is
	// sent as it is fetched. Below it, an answer is sent whole, with its
	// length, and any refusal keeps its own status.
	DefaultStreamAbove = 1 << 20
	// DefaultStreamTimeout bounds a read whose answer streams, from the
	// request's start; before its first byte a read has Config.Timeout.
	DefaultStreamTimeout = 5 * time.Minute
	// streamChunk is how much of a streaming answer is sent at once.
	streamChunk = 256 << 10
)

// errStreamAborted is what a piece meets once the handler stopped waiting
// for the call that writes it.
var errStreamAborted = errors.New("the answer's stream was aborted")

// stream sends a read's answer as it is encoded, once it passes the
// threshold: the status and headers first, then each piece, as the call
// encodes them; stop ends that before the handler answers, so nothing
// writes to the response after the handler returned.
type stream struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	deadline time.Time
	gzip     bool
	pool     *sync.Pool // of *gzip.Writer

	// begun: the first piece was written, or is being written; readable
	// while the call's goroutine writes.
	begun atomic.Bool

	mu      sync.Mutex
	started bool // the status is sent
	held    bool // the call's pieces are refused: the handler answers
	aborted bool // the body is to be left unended
	zw      *gzip.Writer
}

func (h *Handler) newStream(w http.ResponseWriter, r *http.Request) *stream {
	return &stream{w: w, rc: http.NewResponseController(w), gzip: acceptsGzip(r.Header.Values("Accept-Encoding")), pool: &h.gzips}
}

// write sends a piece from the call, the status and headers before the
// first.
func (s *stream) write(p []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held || s.aborted {
		return errStreamAborted
	}
	return s.send(p)
}

func (s *stream) send(p []byte) error {
	if !s.started {
		s.started = true
		s.begun.Store(true)
		h := s.w.Header()
		SetAnswerHeaders(h)
		if s.gzip {
			h.Set("Content-Encoding", "gzip")
			h.Add("Vary", "Accept-Encoding")
			s.zw = s.pool.Get().(*gzip.Writer)
			s.zw.Reset(s.w)
		}
		s.w.WriteHeader(http.StatusOK)
		// The server's own write timeout is for answers sent whole.
		s.rc.SetWriteDeadline(s.deadline.Add(time.Second)) //nolint:errcheck // not every writer has one
	}
	var err error
	if s.zw != nil {
		if _, err = s.zw.Write(p); err == nil {
			err = s.zw.Flush()
		}
	} else {
		_, err = s.w.Write(p)
	}
	if err == nil {
		err = s.rc.Flush()
	}
	return err
}

// stop ends the call's writing, once the handler has its result (or gave
// up waiting: failed); it reports whether the status was sent. A piece
// being written to a client that does not read is interrupted when the
// call failed.
func (s *stream) stop(failed bool) (started bool) {
	if failed {
		s.rc.SetWriteDeadline(time.Now()) //nolint:errcheck // not every writer has one
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = true
	if failed {
		if !s.started {
			// Nothing was sent: the refusal goes out as usual.
			s.rc.SetWriteDeadline(time.Time{}) //nolint:errcheck // as above
		}
		s.abortLocked()
	}
	return s.started
}

// finish sends the answer's last piece and ends the body.
func (s *stream) finish(last []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.aborted {
		return errStreamAborted
	}
	if err := s.send(last); err != nil {
		return err
	}
	if s.zw == nil {
		return nil
	}
	err := s.zw.Close()
	s.pool.Put(s.zw)
	s.zw = nil
	if err == nil {
		err = s.rc.Flush()
	}
	return err
}

// abort leaves the body unended.
func (s *stream) abort() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.abortLocked()
}

func (s *stream) abortLocked() {
	s.aborted = true
	// A gzip stream left unended is never used again.
	s.zw = nil
}

// acceptsGzip reports whether Accept-Encoding values allow gzip (RFC 9110
// 12.5.3): named, or by "*", with a q-value above zero.
func acceptsGzip(values []string) bool {
	gzipQ, starQ := -1.0, -1.0
	for _, v := range values {
		for _, item := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(strings.TrimSpace(item), ";")
			q := 1.0
			for _, p := range strings.Split(params, ";") {
				k, val, ok := strings.Cut(strings.TrimSpace(p), "=")
				if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
					if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
						q = f
					} else {
						q = 0
					}
				}
			}
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "gzip", "x-gzip":
				gzipQ = q
			case "*":
				starQ = q
			}
		}
	}
	if gzipQ >= 0 {
		return gzipQ > 0
	}
	return starQ > 0
}
