package firebird

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/erp-gateway/gateway/shared/calls"
	"github.com/erp-gateway/gateway/shared/erp"
)

// Options tune every instance's pool; zero values take the defaults.
type Options struct {
	// MaxConns caps the connections one instance's pool opens (4).
	MaxConns int
	// ConnMaxIdle (240s) is how long a connection may sit unused before it
	// is checked with a ping on its next use: networks between a Lambda and
	// a customer's Firebird drop idle flows, AWS NAT after 350 s.
	ConnMaxIdle time.Duration
	// StmtMaxAge (60s) bounds how long a procedure, trigger or view an
	// ERP upgrade altered may be served by its old definition, and a
	// grant given or revoked go unseen: Firebird keeps those and the
	// access lists it checked per attachment as they were (measured), and
	// only new attachments see the change (versionQuery). Every StmtMaxAge
	// a pool's next call checks whether any changed, and the pool is
	// replaced when one did (pool.verify).
	StmtMaxAge time.Duration
	// MaxStatements caps the statements prepared on one connection (64).
	MaxStatements int
	// LongestCall is the longest a call of this process may run: the
	// longest deadline it gives one (DefaultLongestCall). A transaction of
	// an attachment of ours older than it and orphanMargin is an orphan,
	// cancelled by whichever process of ours meets it (orphans.go).
	LongestCall time.Duration
	// Log receives the orphans cancelled, and a hunt the database refuses;
	// nil discards them.
	Log *slog.Logger
}

// Defaults of Options.
const (
	DefaultMaxConns      = 4
	DefaultMaxStatements = 64
	DefaultConnMaxIdle   = 240 * time.Second
	DefaultStmtMaxAge    = 60 * time.Second
	// DefaultLongestCall is for tools that make only short calls: a
	// bound longer than any of their calls.
	DefaultLongestCall = time.Minute
)

func (o Options) withDefaults() Options {
	o.MaxConns = cmp.Or(o.MaxConns, DefaultMaxConns)
	o.MaxStatements = cmp.Or(o.MaxStatements, DefaultMaxStatements)
	o.ConnMaxIdle = cmp.Or(o.ConnMaxIdle, DefaultConnMaxIdle)
	o.StmtMaxAge = cmp.Or(o.StmtMaxAge, DefaultStmtMaxAge)
	o.LongestCall = cmp.Or(o.LongestCall, DefaultLongestCall)
	o.Log = cmp.Or(o.Log, slog.New(slog.DiscardHandler))
	return o
}

// Pools keeps one connection pool per instance, reused across requests. A
// pool is replaced when the instance's settings change or its connections
// turn out dead. Pools is safe for concurrent use.
type Pools struct {
	opts  Options
	mu    sync.Mutex
	pools map[string]*pool
	hunts map[string]*hunting // by instance: its orphans (orphans.go)
}

type pool struct {
	cfg erp.Connection
	db  *sql.DB

	mu sync.Mutex
	// checked is when the procedures were last compared (the pool's
	// creation at first), version what they were then ("" before the
	// first check), and since when connections load definitions known to
	// be at least as new as version.
	checked time.Time
	version string
	since   time.Time
	// hunted is when the pool last hunted orphans on the write path, and
	// huntRefused says its user may not (orphans.go).
	hunted      time.Time
	huntRefused bool
}

// The pools are the store package calls runs sequences on.
var _ calls.Store = (*Pools)(nil)

// NewPools returns an empty set of pools.
func NewPools(opts Options) *Pools {
	return &Pools{opts: opts.withDefaults(), pools: make(map[string]*pool), hunts: make(map[string]*hunting)}
}

func (p *Pools) get(t erp.Target) (*pool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur, ok := p.pools[t.Instance]; ok {
		if cur.cfg == t.Connection {
			return cur, nil
		}
		go cur.db.Close()
	}
	instance := t.Instance
	c, err := newConnector(t.Connection, p.bound(), p.opts.MaxStatements, func(id string) { p.abandon(instance, id) })
	if err != nil {
		// Its text would quote the connection string, password included.
		return nil, fmt.Errorf("%w: the connection settings cannot be used", erp.ErrUnavailable)
	}
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(p.opts.MaxConns)
	db.SetMaxIdleConns(p.opts.MaxConns)
	db.SetConnMaxLifetime(connMaxLife)
	db.SetConnMaxIdleTime(p.opts.ConnMaxIdle)
	cur := &pool{cfg: t.Connection, db: db, checked: time.Now(), hunted: time.Now()}
	p.pools[t.Instance] = cur
	return cur, nil
}

// bound is the age past which a transaction of an attachment of ours is an
// orphan.
func (p *Pools) bound() time.Duration { return p.opts.LongestCall + orphanMargin }

// connMaxLife bounds a connection's life even when no procedure changes:
// the driver keeps every transaction a connection ran in memory until it
// closes.
const connMaxLife = 10 * time.Minute

// versionQuery reads what changes whenever code an attachment keeps
// compiled, or a grant, changes: per table, the sum of its rows' record
// versions (the number of the transaction that last wrote each row) and its
// count. An attachment keeps, as it first loaded them (measured, each),
// the procedures it ran (RDB$PROCEDURES), the triggers they fired
// (RDB$TRIGGERS), the views they read (RDB$RELATIONS, which ALTER TABLE
// writes too), and every access list it checked (RDB$SECURITY_CLASSES,
// which every GRANT and REVOKE rewrites, whoever it is to, and the creation
// of most objects writes), so only new connections see an upgrade's ALTER,
// the grant a failing call needs (USAGE on an exception, to its procedure),
// or enforce a REVOKE. A function's new body and an exception's new text
// are seen at once. A sum, not the newest: a change committed by a
// transaction older than the newest row's (a DBA's tool that keeps one
// open) would not move a maximum. A database with 200 tables and 52,000
// rows of RDB$USER_PRIVILEGES had 1,076 security classes: the check read
// the four in about 2 ms.
const versionQuery = `SELECT
  (SELECT COALESCE(SUM(RDB$RECORD_VERSION), 0) || ':' || COUNT(*) FROM RDB$PROCEDURES) || ':' ||
  (SELECT COALESCE(SUM(RDB$RECORD_VERSION), 0) || ':' || COUNT(*) FROM RDB$TRIGGERS) || ':' ||
  (SELECT COALESCE(SUM(RDB$RECORD_VERSION), 0) || ':' || COUNT(*) FROM RDB$RELATIONS) || ':' ||
  (SELECT COALESCE(SUM(RDB$RECORD_VERSION), 0) || ':' || COUNT(*) FROM RDB$SECURITY_CLASSES)
FROM RDB$DATABASE`

// errChanged: what versionQuery reads changed since the pool's baseline;
// the pool is replaced and the call retried on the new one.
var errChanged = errors.New("firebird: a procedure, trigger, view or grant changed")

// verify compares the database's version (versionQuery) with the pool's
// when a check is due (every maxAge), before the call runs anything else.
// The first check is the baseline: connections that load definitions after
// it hold ones at least as new, and serve until a check finds a change (or
// connMaxLife). Those that loaded before it serve maxAge from then
// (outdated), as there is no telling what they hold. A check costs two
// round trips (and its statement's prepare, once per connection);
// replacing a connection costs its connect and the prepare of each
// operation it runs.
func (cur *pool) verify(ctx context.Context, s *Session, maxAge time.Duration) error {
	cur.mu.Lock()
	last := cur.checked
	due := since(last) >= maxAge
	if due {
		cur.checked = time.Now() // one call checks; the others go on
	}
	cur.mu.Unlock()
	if !due {
		return nil
	}
	row, err := s.row(ctx, versionQuery, nil)
	cur.mu.Lock()
	defer cur.mu.Unlock()
	if err != nil && connectionLost(ctx, err) || ctx.Err() != nil {
		cur.checked = last
		return cmp.Or(err, ctx.Err())
	}
	v := ""
	if err == nil && len(row) == 1 {
		v = fmt.Sprint(row[0])
	}
	switch {
	case v == "":
		// The database would not tell (the query failed): every
		// connection serves maxAge, as before a baseline.
		cur.version, cur.since = "", time.Time{}
	case cur.version == "":
		cur.version, cur.since = v, time.Now()
	case v != cur.version:
		return errChanged
	}
	cur.checked = time.Now()
	return nil
}

// outdated reports a connection that must no longer serve: it loaded
// definitions before the pool's baseline, maxAge ago or more.
func (cur *pool) outdated(c *conn, maxAge time.Duration) bool {
	cur.mu.Lock()
	defer cur.mu.Unlock()
	return !c.loaded.IsZero() && (cur.since.IsZero() || c.loaded.Before(cur.since)) && since(c.loaded) > maxAge
}

// discard drops the instance's pool if it is still cur, so the next call
// dials fresh connections: after a server restart every pooled connection is
// dead.
func (p *Pools) discard(instance string, cur *pool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pools[instance] == cur {
		delete(p.pools, instance)
		go cur.db.Close()
	}
}

// Close closes every pool.
func (p *Pools) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for name, cur := range p.pools {
		errs = append(errs, cur.db.Close())
		delete(p.pools, name)
	}
	return errors.Join(errs...)
}
