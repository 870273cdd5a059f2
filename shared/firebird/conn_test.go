package firebird

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/erp"
)

// TestAConnectWithoutADeadlineEnds: a connect whose context never ends (the
// one database/sql gives the connections it opens in the background) still
// gives up on a server that accepts and never answers, after the
// connector's bound, so it cannot hold a slot of its pool for good.
func TestAConnectWithoutADeadlineEnds(t *testing.T) {
	frozen, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer frozen.Close()
	go func() {
		for {
			c, err := frozen.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accepted, never answered
		}
	}()
	cfg := erp.Connection{Host: "127.0.0.1", Port: frozen.Addr().(*net.TCPAddr).Port, Database: "/frozen.fdb", User: "GATEWAY", Password: "x"}
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
