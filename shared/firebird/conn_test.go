package firebird

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/erp"
)

// hang listens where a frozen Firebird would be, accepting and never
// answering, until the test ends, and returns its port (fbtest.Hang's, which
// this package cannot import: fbtest imports it).
func hang(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var conns []net.Conn
		for {
			c, err := ln.Accept()
			if err != nil { // closed: the test is over
				for _, c := range conns {
					c.Close()
				}
				return
			}
			conns = append(conns, c)
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestAConnectWithoutADeadlineEnds: a connect whose context never ends (the
// one database/sql gives the connections it opens in the background) still
// gives up on a server that accepts and never answers, after the
// connector's bound, so it cannot hold a slot of its pool for good.
func TestAConnectWithoutADeadlineEnds(t *testing.T) {
	cfg := erp.Connection{Host: "127.0.0.1", Port: hang(t), Database: "/frozen.fdb", User: "GATEWAY", Password: "x"}
	const bound = 300 * time.Millisecond
	c, err := newConnector(cfg, bound, DefaultMaxStatements, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	connected := make(chan error, 1)
	go func() {
		_, err := c.Connect(context.Background())
		connected <- err
	}()
	select {
	case err := <-connected:
		if err == nil {
			t.Fatal("connected to a server that never answers")
		}
		if took := time.Since(start); took > bound+abandonGrace+hardDropGrace {
			t.Fatalf("the connect gave up after %v; its bound is %v", took, bound)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the connect still waits after 10 s; its bound is %v", bound)
	}
}
