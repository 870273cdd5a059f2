package fbtest

import (
	"cmp"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/erp"
)

// Link is a TCP proxy to Firebird standing in for a WAN: each direction's
// bytes arrive Delay after they were sent (a round trip costs 2×Delay), and
// it counts round trips, each time a client sends after the server last
// spoke (or first): the exchanges a client waits on. Counts do not drift
// with a loaded machine, so tests hold them.
type Link struct {
	// Addr is where clients connect instead of Firebird.
	Addr  string
	delay time.Duration
	trips atomic.Int64

	mu    sync.Mutex
	flows []*atomic.Bool // each flow's "dropped"
	down  time.Time      // flows opened before this are dropped (Drop)
	// closing: the bytes the server may still send before its flow is
	// closed (CloseAfter); negative, never.
	closing atomic.Int64
}

// NewLink proxies to cfg's server with delay each way until the test ends.
func NewLink(t testing.TB, cfg erp.Connection, delay time.Duration) *Link {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &Link{Addr: ln.Addr().String(), delay: delay}
	l.closing.Store(-1)
	target := net.JoinHostPort(cfg.Host, strconv.Itoa(cmp.Or(cfg.Port, erp.DefaultPort)))
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range open {
			c.Close()
		}
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			dropped := l.flow()
			mu.Lock()
			open = append(open, client)
			mu.Unlock()
			if dropped.Load() {
				// Born while the link is down: its first packets never
				// reach the server, and nothing ever answers.
				wg.Add(1)
				go func() { defer wg.Done(); io.Copy(io.Discard, client) }() //nolint:errcheck // a black hole
				continue
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			mu.Lock()
			open = append(open, server)
			mu.Unlock()
			var turn atomic.Bool // true once the server spoke last
			turn.Store(true)
			wg.Add(2)
			go func() { defer wg.Done(); l.pipe(server, client, dropped, func() { l.count(&turn, false) }, nil) }()
			go func() { defer wg.Done(); l.pipe(client, server, dropped, func() { l.count(&turn, true) }, &l.closing) }()
		}
	}()
	return l
}

// flow registers a new flow: dropped from birth while the link is down.
func (l *Link) flow() *atomic.Bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	dropped := &atomic.Bool{}
	dropped.Store(time.Now().Before(l.down))
	l.flows = append(l.flows, dropped)
	return dropped
}

// Drop cuts the link as a NAT or firewall that loses its flows' state does:
// every flow open now is dropped for good, both ways, silently (what either
// end sends never arrives, and neither end is closed), and so is every flow
// opened within d. Flows opened after d pass again.
func (l *Link) Drop(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.flows {
		f.Store(true)
	}
	l.flows = nil
	l.down = time.Now().Add(d)
}

// CloseAfter lets the server send n more bytes to its clients, then closes
// the flow that would carry the next one, at both ends, as a server that
// exits or a DBA's kill does (an orderly close, not Drop's silence): a
// client reading an answer gets its first n bytes and then the end.
func (l *Link) CloseAfter(n int64) { l.closing.Store(n) }

// Through is cfg reaching its server through the link.
func (l *Link) Through(cfg erp.Connection) erp.Connection {
	host, port, _ := net.SplitHostPort(l.Addr)
	cfg.Host = host
	cfg.Port, _ = strconv.Atoi(port)
	return cfg
}

// RoundTrips is how many round trips clients made so far.
func (l *Link) RoundTrips() int64 { return l.trips.Load() }

// count notes who spoke: a client speaking after the server starts a round
// trip.
func (l *Link) count(serverLast *atomic.Bool, server bool) {
	if !server && serverLast.Swap(false) {
		l.trips.Add(1)
	}
	if server {
		serverLast.Store(true)
	}
}

// pipe copies src to dst, each piece delayed, in order, until the flow is
// dropped; spoke is called as each piece is read. closing, for the server's
// side, bounds what it still delivers (CloseAfter).
func (l *Link) pipe(dst, src net.Conn, dropped *atomic.Bool, spoke func(), closing *atomic.Int64) {
	type piece struct {
		b  []byte
		at time.Time
	}
	pieces := make(chan piece, 1024)
	go func() {
		defer close(pieces)
		for {
			buf := make([]byte, 64<<10)
			n, err := src.Read(buf)
			if n > 0 && !dropped.Load() {
				spoke()
				pieces <- piece{buf[:n], time.Now().Add(l.delay)}
			}
			if err != nil {
				return
			}
		}
	}()
	for p := range pieces {
		time.Sleep(time.Until(p.at))
		if dropped.Load() {
			continue // lost on the way; the reader goes on reading
		}
		if closing != nil {
			if left := closing.Load(); left >= 0 {
				n := min(int64(len(p.b)), left)
				closing.Store(left - n)
				if n < int64(len(p.b)) {
					dst.Write(p.b[:n]) //nolint:errcheck // the flow ends here
					closing.Store(-1)
					break
				}
			}
		}
		if _, err := dst.Write(p.b); err != nil {
			break
		}
	}
	// One side ended: end both, as a network would, and let the reader
	// end; once the flow is dropped the other side never hears of it.
	src.Close()
	if !dropped.Load() {
		dst.Close()
	}
	for range pieces {
	}
}
