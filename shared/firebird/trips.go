package firebird

import (
	"bufio"
	"io"
	"net"
	"reflect"
	"sync/atomic"
	"unsafe"
)

// wire counts an attachment's round trips: one each time the driver sends
// after the server last spoke, the exchanges the caller waits on across the
// link, counted as fbtest.Link counts them.
//
// The driver (v0.9.23) dials its own socket and offers no hook to wrap it,
// so wire reaches the driver's buffered reader and writer by reflection and
// points them at itself. The alternative, a forwarder in the process that
// every connection dials, cost 20% of a read's time on loopback (two more
// hops per round trip; measured) where this costs nothing. A driver whose
// layout differs is left alone: the round trips are then not counted
// (countTrips returns nil), and TestRoundTrips, which holds the counts to
// the link's, fails.
type wire struct {
	trips      atomic.Int64
	serverLast atomic.Bool
	conn       net.Conn
}

func (w *wire) Read(p []byte) (int, error) {
	n, err := w.conn.Read(p)
	if n > 0 {
		w.serverLast.Store(true)
	}
	return n, err
}

func (w *wire) Write(p []byte) (int, error) {
	if len(p) > 0 && w.serverLast.Swap(false) {
		w.trips.Add(1)
	}
	return w.conn.Write(p)
}

// Trips is how many round trips the attachment made since it was counted;
// 0 for a nil wire.
func (w *wire) Trips() int64 {
	if w == nil {
		return 0
	}
	return w.trips.Load()
}

// countTrips starts counting the round trips of the driver's connection dc,
// right after it attached (nothing buffered either way), or returns nil.
func countTrips(dc any) *wire {
	v := reflect.ValueOf(dc)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	wp := v.Elem().FieldByName("wp")
	if wp.Kind() != reflect.Pointer || wp.IsNil() || wp.Elem().Kind() != reflect.Struct {
		return nil
	}
	ch := wp.Elem().FieldByName("conn")
	if ch.Kind() != reflect.Struct {
		return nil
	}
	conn, okc := field[net.Conn](ch, "conn")
	r, okr := field[*bufio.Reader](ch, "reader")
	w, okw := field[*bufio.Writer](ch, "writer")
	if !okc || !okr || !okw || conn == nil || r == nil || w == nil || r.Buffered() != 0 || w.Buffered() != 0 {
		return nil
	}
	t := &wire{conn: conn}
	t.serverLast.Store(true) // it answered the attachment
	r.Reset(io.Reader(t))
	w.Reset(io.Writer(t))
	return t
}

// field reads the unexported field name of the addressable struct s, if it
// has type T.
func field[T any](s reflect.Value, name string) (T, bool) {
	var zero T
	f := s.FieldByName(name)
	if !f.IsValid() || f.Type() != reflect.TypeFor[T]() || !f.CanAddr() {
		return zero, false
	}
	return *(*T)(unsafe.Pointer(f.UnsafeAddr())), true
}
