package firebird

import (
	"context"
	"net"
	"sync/atomic"
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
	}
	return n, err
}

func (w *wire) Write(p []byte) (int, error) {
	if len(p) > 0 && w.serverLast.Swap(false) {
		w.trips.Add(1)
	}
	return w.Conn.Write(p)
}

// Trips is how many round trips the attachment made since it was dialed.
func (w *wire) Trips() int64 { return w.trips.Load() }
