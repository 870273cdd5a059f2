package firebird

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/tally"
	"github.com/nakagami/firebirdsql"
)

// connector opens the driver's connections wrapped in *conn, so that each one
// carries the statements prepared on it. database/sql stays the pool: it caps
// and recycles connections and hands one to each call.
type connector struct {
	cfg     erp.Connection
	many    *sync.Map     // the pool's write blocks whose read-back answers rows (Session.Write)
	bound   time.Duration // the attachments' orphan bound (orphans.go)
	maxStmt int
	abandon func(id string)
}

// newConnector returns a connector to cfg's database whose attachments carry
// bound in their marker, and hands abandon the id of each given up with its
// wire in an unknown state.
func newConnector(cfg erp.Connection, bound time.Duration, maxStmt int, abandon func(id string)) (*connector, error) {
	if _, err := firebirdsql.NewConnector(DSN(cfg), nil); err != nil {
		return nil, err
	}
	return &connector{cfg: cfg, many: new(sync.Map), bound: bound, maxStmt: maxStmt, abandon: abandon}, nil
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	if _, ok := ctx.Deadline(); !ok {
		// database/sql opens a replacement for a discarded connection in
		// the background, with a context that ends only with the pool: a
		// frozen server or a cut link would hold that slot of the pool,
		// and the callers waiting for it, until TCP gave up.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.bound)
		defer cancel()
	}
	// Counted as asked, like prepares: a refused attachment (a wrong
	// password) costs the server work too.
	tally.Add(ctx, tally.ConnectionOpens)
	// Each attachment's marker names it (orphans.go): its connector is
	// its own, and so is its socket, dialed here to count its round trips.
	id := newConnID()
	dc, w, err := connect(ctx, attachDSN(c.cfg, c.bound, id))
	if err != nil {
		return nil, err
	}
	return &conn{inner: dc, id: id, abandon: c.abandon, wire: w, many: c.many, stmts: make(map[string]*stmt), blocks: make(map[string]block), reads: make(map[string]string), utf8: c.cfg.CharacterSet() == "UTF8", max: c.maxStmt, used: time.Now()}, nil
}

// connect attaches through a wire of ours, its handshake bounded by ctx
// (wire.watch).
func connect(ctx context.Context, dsn string) (driver.Conn, *wire, error) {
	var w *wire
	release := func() bool { return false }
	inner, err := firebirdsql.NewConnector(dsn, func(ctx context.Context, network, addr string) (net.Conn, error) {
		var err error
		if w, err = dial(ctx, network, addr); err == nil {
			release = w.watch(ctx)
		}
		return w, err
	})
	if err != nil {
		return nil, nil, err
	}
	dc, err := inner.Connect(ctx)
	if release() && err == nil {
		dc.Close() //nolint:errcheck // the socket is closed already
		err = fmt.Errorf("firebird: connecting: %w", context.Cause(ctx))
	}
	if err != nil {
		return nil, nil, err
	}
	if w == nil {
		dc.Close() //nolint:errcheck // never used
		return nil, nil, errors.New("firebird: the driver did not dial through the gateway's dialer")
	}
	return dc, w, nil
}

func (c *connector) Driver() driver.Driver { return errNoDriver{} }

// errNoDriver completes driver.Connector: database/sql opens connections
// only through Connect.
type errNoDriver struct{}

func (errNoDriver) Open(string) (driver.Conn, error) { return nil, errNotThroughDatabaseSQL }

// The driver's connection offers all of these; conn relies on them.
type driverConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.Validator
	driver.Pinger
}

// conn is one attachment and the statements prepared on it. Only the call
// holding it (through sql.Conn.Raw) touches it.
type conn struct {
	inner driver.Conn
	// id names the attachment in its marker; abandon is told it when the
	// connection is closed with its wire in an unknown state.
	id      string
	abandon func(id string)
	wire    *wire // its socket
	many    *sync.Map
	counted int64 // its round trips counted so far (newTrips)
	stmts   map[string]*stmt
	max     int
	used    time.Time // end of the last call
	// loaded is when it first prepared anything but the procedures'
	// version, no later than it loaded any procedure's definition
	// (pool.outdated); zero before.
	loaded time.Time
	broken bool      // the wire is in an unknown state: never reuse
	read   driver.Tx // the transaction reads run in (conn.call)
	// blocks holds each block (Session.block), written from
	// its procedures' signatures as read on this connection.
	blocks map[string]block
	// reads holds the statement each procedure is read with
	// (Session.readQuery), by its plain one.
	reads map[string]string
	// utf8: the connection's character set is UTF8, in which the driver
	// hands on a VARCHAR and a text BLOB alike (Session.readQuery).
	utf8 bool
	// blindCommit: the database had no trigger ON TRANSACTION COMMIT when
	// the connection last read signatures of procedures with parameters
	// (Session.commitWith); false before.
	blindCommit bool
}

// stmt is a statement prepared on a conn, reused for the conn's life.
type stmt struct {
	driver.Stmt
	used time.Time // its last use: the least recently used is evicted
	laid *layout   // how its rows make an answer's (stmt.layout)
}

func (c *conn) fb() (driverConn, error) {
	fc, ok := c.inner.(driverConn)
	if !ok {
		return nil, fmt.Errorf("the firebirdsql connection lacks a database/sql interface this gateway needs")
	}
	return fc, nil
}

// IsValid lets database/sql drop a connection a call left broken.
func (c *conn) IsValid() bool {
	v, ok := c.inner.(driver.Validator)
	return !c.broken && (!ok || v.IsValid())
}

// Prepare and Begin complete driver.Conn. Calls never reach them: they
// prepare and begin on the driver's connection, inside Raw.
func (c *conn) Prepare(string) (driver.Stmt, error) { return nil, errNotThroughDatabaseSQL }
func (c *conn) Begin() (driver.Tx, error)           { return nil, errNotThroughDatabaseSQL }

var errNotThroughDatabaseSQL = errors.New("firebird: statements run through Pools, not database/sql")

// Close drops the attachment's socket rather than detaching politely: the
// driver's polite close rolls back every transaction the connection ever ran
// (it keeps them all) and then detaches, each a round trip bounded only by a
// 10 s teardown timeout, so a long-lived connection or a silent network would
// hold the caller for seconds to hours. Every transaction of ours has ended
// by then; the server frees the attachment when the socket closes, as it does
// when Lambda discards an execution environment. The driver's own Close then
// fails at once on the closed socket. A connection closed with its wire in an
// unknown state may be one the network cut off, which the server never hears
// closed: its id goes to abandon, and the next call to its database cancels
// it (orphans.go).
func (c *conn) Close() error {
	lost := !c.IsValid()
	if lost {
		c.wire.abort() //nolint:errcheck // closing is the point
	} else {
		c.wire.Close() //nolint:errcheck // closing is the point; the driver's Close reports
	}
	c.inner.Close() //nolint:errcheck // it fails on the closed socket, as meant
	if lost && c.abandon != nil {
		c.abandon(c.id)
	}
	return nil
}

// newTrips is the round trips made on the connection since it was last
// asked, its attachment's for the first ask.
func (c *conn) newTrips() int64 {
	n := c.wire.Trips()
	defer func() { c.counted = n }()
	return n - c.counted
}

// statement returns the connection's prepared statement for query,
// preparing it on first use. It must run inside a transaction of the
// caller's: the driver prepares and frees statements in the connection's
// current transaction.
func (c *conn) statement(ctx context.Context, fc driverConn, query string) (*stmt, error) {
	if s, ok := c.stmts[query]; ok {
		s.used = time.Now()
		return s, nil
	}
	if len(c.stmts) >= c.max {
		c.evictLeastUsed()
	}
	if c.loaded.IsZero() && query != versionQuery {
		c.loaded = time.Now()
	}
	// Counted as asked: the server does the work whether or not it succeeds.
	tally.Add(ctx, tally.StatementPrepares)
	ds, err := fc.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s := &stmt{Stmt: ds, used: time.Now()}
	c.stmts[query] = s
	return s, nil
}

// forget frees a statement on the server and drops it from the cache.
func (c *conn) forget(query string) {
	if s, ok := c.stmts[query]; ok {
		delete(c.stmts, query)
		_ = s.Close() // a failure leaves the connection to be judged by IsValid
	}
}

func (c *conn) evictLeastUsed() {
	var least string
	var at time.Time
	for q, s := range c.stmts {
		if at.IsZero() || s.used.Before(at) {
			least, at = q, s.used
		}
	}
	c.forget(least)
}

var (
	_ driver.Connector = (*connector)(nil)
	_ driver.Validator = (*conn)(nil)
)

// since is the time elapsed since t by the wall clock. Lambda freezes an
// execution environment between invocations, and its monotonic clock may
// not count the minutes it slept: a connection idle across a freeze, which
// a firewall may have dropped meanwhile, must look idle (pinged before a
// call, never sent a write with its commit blind).
func since(t time.Time) time.Duration { return time.Now().Round(0).Sub(t) }
