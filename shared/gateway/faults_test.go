package gateway_test

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// tcpProxy forwards connections to target. blackhole makes the flows it has
// stop forwarding without closing them: what a NAT gateway or firewall that
// dropped a flow silently, or a half-open TCP connection, looks like to both
// ends. New flows forward normally.
type tcpProxy struct {
	t      testing.TB
	ln     net.Listener
	target string
	mu     sync.Mutex
	flows  []*atomic.Bool
	hung   atomic.Bool // new flows are accepted and never answered
}

func newProxy(t testing.TB, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{t: t, ln: ln, target: target}
	var conns []net.Conn
	var connsMu sync.Mutex
	t.Cleanup(func() {
		ln.Close()
		connsMu.Lock()
		defer connsMu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			if p.hung.Load() {
				connsMu.Lock()
				conns = append(conns, client)
				connsMu.Unlock()
				go io.Copy(io.Discard, client) //nolint:errcheck // swallowed until closed
				continue
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			connsMu.Lock()
			conns = append(conns, client, server)
			connsMu.Unlock()
			dead := &atomic.Bool{}
			p.mu.Lock()
			p.flows = append(p.flows, dead)
			p.mu.Unlock()
			go pipe(client, server, dead)
			go pipe(server, client, dead)
		}
	}()
	return p
}

// pipe copies until dst or src fails; once dead, it reads and discards, so
// neither end sees a close or a reset.
func pipe(dst, src net.Conn, dead *atomic.Bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !dead.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !dead.Load() {
				dst.Close()
			}
			return
		}
	}
}

func (p *tcpProxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// hang makes the proxy a server that accepts and never answers, for flows
// old and new (on), or forward new flows again (off).
func (p *tcpProxy) hang(on bool) {
	p.hung.Store(on)
	if on {
		p.blackhole()
	}
}

func (p *tcpProxy) blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range p.flows {
		f.Store(true)
	}
}
