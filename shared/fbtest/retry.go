package fbtest

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Answer is what one request got: its status, body and headers, or Err
// when no answer came.
type Answer struct {
	Status int
	Body   string
	Header http.Header
	Err    error
}

// Final reports an answer a client need not send again: anything but no
// answer, 503, 409 and 429.
func Final(a Answer) bool {
	return a.Err == nil && a.Status != http.StatusServiceUnavailable && a.Status != http.StatusConflict && a.Status != http.StatusTooManyRequests
}

// Retrying counts what clients that send each request again until its
// answer is final did: as integrators are told to with an Idempotency-Key.
type Retrying struct {
	Sent, Again, Unknown, Replayed atomic.Int64
}

// Until sends with send until final holds of its answer, or ctx ends (then
// ok is false), pausing as the answer's Retry-After says (at most a second)
// or 100 ms.
func (r *Retrying) Until(ctx context.Context, final func(Answer) bool, send func() Answer) (a Answer, ok bool) {
	for attempt := 0; ctx.Err() == nil; attempt++ {
		r.Sent.Add(1)
		if attempt > 0 {
			r.Again.Add(1)
		}
		a = send()
		if strings.Contains(a.Body, `"cod_error":1204`) {
			r.Unknown.Add(1)
		}
		if a.Header.Get("Idempotent-Replayed") == "true" {
			r.Replayed.Add(1)
		}
		if final(a) {
			return a, true
		}
		pause := 100 * time.Millisecond
		if s, err := strconv.Atoi(a.Header.Get("Retry-After")); err == nil {
			pause = min(time.Duration(s)*time.Second, time.Second)
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
	return a, false
}

// Hang listens where a Firebird host frozen would be, or a firewall that
// lets the handshake through and drops the rest: it accepts connections and
// never answers, until the listener is closed.
func Hang() (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	return ln, nil
}
