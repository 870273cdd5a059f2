package thirdparty

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nakagami/firebirdsql"

	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/firebird"
)

// counted is the sockets a connector dialed, and the round trips made on
// them: a send after the server spoke (shared/firebird counts so too).
type counted struct {
	mu    sync.Mutex
	conns []net.Conn
	trips atomic.Int64
	// refuseBegin spoils the next send, which must begin with a
	// transaction's begin (op_transaction), so that the server refuses it.
	refuseBegin atomic.Bool
	// refuseLate spoils the next send, which must begin with a statement's
	// free left for the next request (op_free_statement), so that the
	// server refuses the free, its answer read late.
	refuseLate atomic.Bool
	// refuseBlob spoils the next send of a BLOB's open with its first
	// segment's request (36 bytes: op_open_blob2, op_get_segment), so that
	// the server refuses the open.
	refuseBlob atomic.Bool
}

type countedConn struct {
	net.Conn
	c          *counted
	serverLast atomic.Bool
}

func (cc *countedConn) Read(p []byte) (int, error) {
	n, err := cc.Conn.Read(p)
	if n > 0 {
		cc.serverLast.Store(true)
	}
	return n, err
}

func (cc *countedConn) Write(p []byte) (int, error) {
	if len(p) > 0 && cc.serverLast.Swap(false) {
		cc.c.trips.Add(1)
	}
	if len(p) > 12 && cc.c.refuseBegin.Swap(false) {
		// The transaction parameter block's version, 3, made one the
		// server refuses ("invalid format for transaction parameter
		// block"). Wire encryption is a stream cipher: a bit flipped in
		// its output flips the same bit of what the server reads.
		p = bytes.Clone(p)
		p[12] ^= 3 ^ 99
	}
	if len(p) > 12 && cc.c.refuseLate.Swap(false) {
		// The statement's handle, made one the server does not have.
		p = bytes.Clone(p)
		p[6] ^= 0x7f
	}
	if len(p) == 36 && cc.c.refuseBlob.Swap(false) {
		// The BLOB id's number, made one the transaction does not have.
		p = bytes.Clone(p)
		p[19] ^= 0x7f
	}
	return cc.Conn.Write(p)
}

func (c *counted) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	cc := &countedConn{Conn: conn, c: c}
	cc.serverLast.Store(true)
	c.mu.Lock()
	c.conns = append(c.conns, cc)
	c.mu.Unlock()
	return cc, nil
}

func (c *counted) dials() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.conns)
}

// countedDB opens the demo database through patch 0002's dial hook, with
// dsn's options added, one connection at a time, its round trips counted.
func countedDB(t *testing.T, options string) (*sql.DB, *counted) {
	t.Helper()
	return countedDBOf(t, fbtest.Demo(t), options)
}

// countedDBOf is countedDB for cfg's database.
func countedDBOf(t *testing.T, cfg erp.Connection, options string) (*sql.DB, *counted) {
	t.Helper()
	c := &counted{}
	conn, err := firebirdsql.NewConnector(firebird.DSN(cfg)+options, c.dial)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db, c
}

// during is the round trips op made.
func (c *counted) during(op func()) int64 {
	before := c.trips.Load()
	op()
	return c.trips.Load() - before
}

// TestDialHook holds patch 0002 against Firebird: a connector's connections
// are the ones its dial opens, a dial's error is the connection's, and
// closing a dialed socket from outside ends that connection only.
func TestDialHook(t *testing.T) {
	db, c := countedDB(t, "")
	ctx := context.Background()
	var one int
	trips := c.during(func() {
		if err := db.QueryRowContext(ctx, "SELECT 1 FROM RDB$DATABASE").Scan(&one); err != nil || one != 1 {
			t.Fatalf("through the hook: %d, %v", one, err)
		}
	})
	if c.dials() != 1 || trips == 0 {
		t.Fatalf("%d dials, %d round trips: the driver did not speak on the dialed socket", c.dials(), trips)
	}

	refused := errors.New("no route to the office")
	conn, err := firebirdsql.NewConnector(firebird.DSN(fbtest.Demo(t)), func(context.Context, string, string) (net.Conn, error) { return nil, refused })
	if err != nil {
		t.Fatal(err)
	}
	if err := sql.OpenDB(conn).PingContext(ctx); !errors.Is(err, refused) {
		t.Fatalf("a refused dial: %v, want %v", err, refused)
	}

	c.mu.Lock()
	c.conns[0].Close()
	c.mu.Unlock()
	// database/sql retries a connection that fails before sending with a
	// new one: the next query dials again.
	if err := db.QueryRowContext(ctx, "SELECT 1 FROM RDB$DATABASE").Scan(&one); err != nil {
		t.Logf("the query on the closed socket: %v", err)
		if err := db.QueryRowContext(ctx, "SELECT 1 FROM RDB$DATABASE").Scan(&one); err != nil {
			t.Fatalf("after the socket was closed: %v", err)
		}
	}
	if c.dials() != 2 {
		t.Fatalf("%d dials after the socket was closed, want 2", c.dials())
	}
}
