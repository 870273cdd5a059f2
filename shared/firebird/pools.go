package firebird

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/nakagami/firebirdsql"

	"github.com/erp-gateway/gateway/shared/record"
)

// Options tune every instance's pool.
type Options struct {
	// MaxConns caps the connections one instance's pool opens.
	MaxConns int
	// ConnMaxLifetime retires connections: closing one gets slower with
	// the number of transactions it ran (FIELD-NOTES), so none runs forever.
	ConnMaxLifetime time.Duration
}

// Target is an instance and how to reach its database.
type Target struct {
	Instance string
	Config   Config
}

// Pools keeps one database/sql pool per instance, reused across requests.
// A pool is replaced when the instance's settings change or its connections
// turn out dead. Pools is safe for concurrent use.
type Pools struct {
	opts  Options
	mu    sync.Mutex
	pools map[string]*pool
}

type pool struct {
	dsn string
	db  *sql.DB
}

// NewPools returns an empty set of pools.
func NewPools(opts Options) *Pools {
	if opts.MaxConns <= 0 {
		opts.MaxConns = 4
	}
	if opts.ConnMaxLifetime <= 0 {
		opts.ConnMaxLifetime = 15 * time.Minute
	}
	return &Pools{opts: opts, pools: make(map[string]*pool)}
}

func (p *Pools) get(t Target) *sql.DB {
	dsn := t.Config.DSN()
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur, ok := p.pools[t.Instance]; ok {
		if cur.dsn == dsn {
			return cur.db
		}
		go cur.db.Close()
	}
	// sql.Open never dials and, with this driver, never fails: a refused
	// setting surfaces, classified, from the first call.
	db, _ := sql.Open("firebirdsql", dsn)
	db.SetMaxOpenConns(p.opts.MaxConns)
	db.SetMaxIdleConns(p.opts.MaxConns)
	db.SetConnMaxLifetime(p.opts.ConnMaxLifetime)
	p.pools[t.Instance] = &pool{dsn: dsn, db: db}
	return db
}

// discard drops the instance's pool if it is still db, so the next call
// dials fresh connections. After a server restart every pooled connection is
// dead and the driver reports a plain io.EOF, which database/sql does not
// retry by itself.
func (p *Pools) discard(instance string, db *sql.DB) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur, ok := p.pools[instance]; ok && cur.db == db {
		delete(p.pools, instance)
		go db.Close()
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

// Read runs a selectable procedure and returns all its rows. A call that
// meets a dead connection is retried once on a fresh pool.
func (p *Pools) Read(ctx context.Context, t Target, procedure string, args []any) (record.Set, error) {
	query := selectSQL(procedure, len(args))
	for attempt := 0; ; attempt++ {
		db := p.get(t)
		set, err := collect(ctx, db, query, args)
		if err == nil {
			return set, nil
		}
		if attempt == 0 && connectionLost(ctx, err) {
			p.discard(t.Instance, db)
			continue
		}
		return record.Set{}, classify(ctx, err)
	}
}

// Write runs an executable procedure and then the read-back procedure in one
// transaction, and commits only when both succeeded. Only a failure to begin
// is retried: after that, the outcome of a lost connection is unknown.
func (p *Pools) Write(ctx context.Context, t Target, procedure string, args []any, readBack string, readArgs []any) (record.Set, error) {
	db := p.get(t)
	// Never BeginTx with ReadOnly on these pools: the driver leaves the
	// connection read-only for later autocommit work (FIELD-NOTES).
	tx, err := db.BeginTx(ctx, nil)
	if err != nil && connectionLost(ctx, err) {
		p.discard(t.Instance, db)
		tx, err = p.get(t).BeginTx(ctx, nil)
	}
	if err != nil {
		return record.Set{}, classify(ctx, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op once committed

	// Exec, not Query: a failing Query leaks its server statement (FIELD-NOTES).
	if _, err := tx.ExecContext(ctx, executeSQL(procedure, len(args)), args...); err != nil {
		return record.Set{}, classify(ctx, err)
	}
	set, err := collect(ctx, tx, selectSQL(readBack, len(readArgs)), readArgs)
	if err != nil {
		return record.Set{}, classify(ctx, err)
	}
	// Commit explicitly: in autocommit the driver loses commit failures.
	if err := tx.Commit(); err != nil {
		return record.Set{}, classify(ctx, err)
	}
	return set, nil
}

// connectionLost tells a dead or broken connection from the database's answer
// and from the caller's own deadline. A restarted server shows as a plain
// io.EOF; a connection the server closed (a DBA killing sessions, say) as a
// status vector.
func connectionLost(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var fb *firebirdsql.FbError
	if !errors.As(err, &fb) {
		return true
	}
	return hasCode(fb, lostConnectionCodes)
}

func selectSQL(procedure string, n int) string {
	return "SELECT * FROM " + procedure + placeholders(n)
}

func executeSQL(procedure string, n int) string {
	return "EXECUTE PROCEDURE " + procedure + placeholders(n)
}

func placeholders(n int) string {
	if n == 0 {
		return ""
	}
	return "(" + strings.Repeat("?, ", n-1) + "?)"
}

type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// collect reads every row; a procedure's exception can arrive with the first
// fetch, i.e. from rows.Err rather than from QueryContext.
func collect(ctx context.Context, q queryer, query string, args []any) (record.Set, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return record.Set{}, err
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return record.Set{}, err
	}
	set := record.Set{Columns: make([]record.Column, len(types))}
	for i, ct := range types {
		set.Columns[i] = record.Column{Name: ct.Name(), Kind: kindOf(ct)}
	}
	dest := make([]any, len(types))
	for rows.Next() {
		row := make([]any, len(types))
		for i := range row {
			dest[i] = &row[i]
		}
		if err := rows.Scan(dest...); err != nil {
			return record.Set{}, err
		}
		set.Rows = append(set.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return record.Set{}, err
	}
	return set, rows.Close()
}

func kindOf(ct *sql.ColumnType) record.Kind {
	switch ct.DatabaseTypeName() {
	case "SHORT", "LONG", "INT64", "INT128":
		if _, scale, ok := ct.DecimalSize(); ok && scale < 0 {
			return record.Decimal
		}
		return record.Integer
	case "DECFLOAT", "DEC16", "DEC34":
		return record.Decimal
	case "DOUBLE", "D_FLOAT":
		return record.Float64
	case "FLOAT":
		return record.Float32
	case "BOOLEAN":
		return record.Boolean
	case "DATE":
		return record.Date
	case "TIME", "TIME WITH TIMEZONE", "TIME WITH TIME ZONE":
		return record.Time
	case "TIMESTAMP", "TIMESTAMP WITH TIMEZONE", "TIMESTAMP WITH TIME ZONE":
		return record.Timestamp
	case "BLOB":
		// Text BLOBs arrive as string and are encoded as text whatever the
		// kind; only binary ones arrive as []byte.
		return record.Binary
	}
	return record.Text
}
