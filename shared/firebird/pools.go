package firebird

import (
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

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
	// StmtMaxAge (60s) is how long a connection, and the statements
	// prepared on it, serve before a new one replaces it, so that an ERP
	// upgrade that alters a procedure is seen: Firebird keeps a procedure's
	// definition per attachment as it was when the attachment first
	// prepared it, whatever is freed (measured), and only new attachments
	// see an ALTER PROCEDURE.
	StmtMaxAge time.Duration
	// MaxStatements caps the statements prepared on one connection (64).
	MaxStatements int
}

// Defaults of Options.
const (
	DefaultConnMaxIdle = 240 * time.Second
	DefaultStmtMaxAge  = 60 * time.Second
)

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 4
	}
	if o.MaxStatements <= 0 {
		o.MaxStatements = 64
	}
	def(&o.ConnMaxIdle, DefaultConnMaxIdle)
	def(&o.StmtMaxAge, DefaultStmtMaxAge)
	return o
}

// Pools keeps one connection pool per instance, reused across requests. A
// pool is replaced when the instance's settings change or its connections
// turn out dead. Pools is safe for concurrent use.
type Pools struct {
	opts  Options
	mu    sync.Mutex
	pools map[string]*pool
}

type pool struct {
	cfg erp.Connection
	db  *sql.DB
}

// NewPools returns an empty set of pools.
func NewPools(opts Options) *Pools {
	return &Pools{opts: opts.withDefaults(), pools: make(map[string]*pool)}
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
	c, err := newConnector(DSN(t.Connection), p.opts.MaxStatements)
	if err != nil {
		// Its text would quote the connection string, password included.
		return nil, fmt.Errorf("%w: the connection settings cannot be used", erp.ErrUnavailable)
	}
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(p.opts.MaxConns)
	db.SetMaxIdleConns(p.opts.MaxConns)
	db.SetConnMaxLifetime(p.opts.StmtMaxAge)
	db.SetConnMaxIdleTime(p.opts.ConnMaxIdle)
	cur := &pool{cfg: t.Connection, db: db}
	p.pools[t.Instance] = cur
	return cur, nil
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
