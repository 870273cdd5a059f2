package firebird

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/erp-gateway/gateway/shared/erp"
)

// wire is an attachment's socket, dialed by the gateway (the driver's
// NewConnector) so that its round trips can be counted: one each time the
// driver sends after the server last spoke, the exchanges the caller waits
// on across the link, counted as fbtest.Link counts them. Closing it drops
// the attachment at once (conn.Close).
type wire struct {
	net.Conn
	trips      atomic.Int64
	serverLast atomic.Bool
	heard      atomic.Pointer[func()] // the watched call's hearing (erp.WithHearing), told each time the server speaks
}

// dial opens a wire to addr.
func dial(ctx context.Context, network, addr string) (*wire, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	w := &wire{Conn: c}
	w.serverLast.Store(true) // the driver's first send is a round trip's
	return w, nil
}

func (w *wire) Read(p []byte) (int, error) {
	n, err := w.Conn.Read(p)
	if n > 0 {
		w.serverLast.Store(true)
		if heard := w.heard.Load(); heard != nil {
			(*heard)()
		}
	}
	if err == io.EOF {
		// The server closing the socket (a restart, a DBA's kill) is never
		// the end of an answer: the driver passes a plain io.EOF from a
		// fetch up as the end of the rows, and a read cut mid-answer would
		// answer 200 with the rows so far.
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (w *wire) Write(p []byte) (int, error) {
	if len(p) > 0 && w.serverLast.Swap(false) {
		w.trips.Add(1)
	}
	return w.Conn.Write(p)
}

// abort closes the socket with what it has not delivered discarded (a
// reset, not a close): a call given up on a silent link must not reach the
// server when the link comes back, minutes later, by the kernel's
// retransmissions, after its caller was answered.
func (w *wire) abort() error {
	w.resetOnClose()
	return w.Conn.Close()
}

// resetOnClose makes the socket's close a reset (abort).
func (w *wire) resetOnClose() {
	if tc, ok := w.Conn.(*net.TCPConn); ok {
		tc.SetLinger(0) //nolint:errcheck // a socket already closed needs none
	}
}

// Trips is how many round trips the attachment made since it was dialed.
func (w *wire) Trips() int64 { return w.trips.Load() }

// watch bounds a call on the wire by ctx: abandonGrace after ctx ends, it
// closes the socket, and whatever the driver still waits for (a frozen
// server's answer, a teardown's read) fails at once, so the call returns
// and its caller answers in time. The driver ends most waits on its own
// when ctx ends (op_cancel, then cancel_hard_drop_grace); this holds for
// every other. release ends the watch before the wire goes back to its
// pool, and reports whether it closed the socket: the connection is then
// broken. It costs no goroutine: the call runs on its caller's. A ctx
// erp.WithHearing is told each time the server speaks until release.
func (w *wire) watch(ctx context.Context) (release func() (closed bool)) {
	unhear := func() {}
	if heard := erp.Hearing(ctx); heard != nil {
		prev := w.heard.Swap(&heard)
		unhear = func() { w.heard.Store(prev) }
	}
	var mu sync.Mutex
	var timer *time.Timer
	released, closed := false, false
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if released {
			return
		}
		// From now on the socket is closed with a reset, whoever closes
		// it: the driver's own hard drop after its cancel as well.
		w.resetOnClose()
		timer = time.AfterFunc(abandonGrace, func() {
			mu.Lock()
			defer mu.Unlock()
			if !released {
				closed = true
				w.abort() //nolint:errcheck // closing is the point
			}
		})
	})
	return func() bool {
		unhear()
		if stop() {
			return false // ctx had not ended
		}
		mu.Lock()
		defer mu.Unlock()
		released = true
		if timer != nil {
			timer.Stop()
		}
		return closed
	}
}
