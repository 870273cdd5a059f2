package firebird

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nakagami/firebirdsql"

	"github.com/erp-gateway/gateway/shared/calls"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/record"
)

// Session is what a transaction's body runs statements with: each is
// prepared once per connection and kept (conn.statement).
type Session struct {
	conn *conn
	fc   driverConn
	at   *atomic.Int32
	// reads: statements run in the connection's read transaction, begun
	// with the first.
	reads bool
	// began is when the statement running was sent: a conflict after a
	// lock wait takes the lock timeout (lockWait).
	began time.Time
}

func (s *Session) prepare(ctx context.Context, query string) (*stmt, error) {
	if s.reads && s.conn.read == nil {
		tx, err := s.fc.BeginTx(ctx, txOptions(calls.ReadOnly))
		if err != nil {
			return nil, err
		}
		s.conn.read = tx
	}
	s.at.Store(int32(preparing))
	began := time.Now()
	st, err := s.conn.statement(ctx, s.fc, query)
	if err != nil {
		// A prepare waits for no lock, but the transaction it begins can:
		// an ON TRANSACTION START trigger's write.
		return nil, waited(err, time.Since(began))
	}
	s.at.Store(int32(executing))
	return st, nil
}

// failed keeps a statement after the procedure's own refusal (an exception, a
// constraint), a lock it gave up waiting for, or an answer over its limits,
// and drops it after anything else, so it is prepared anew.
func (s *Session) failed(ctx context.Context, query string, err error) error {
	err = waited(err, time.Since(s.began))
	var exc *erp.Exception
	if overLimit(err) || lockWaited(err) || errors.As(classify(ctx, executing, err), &exc) {
		return err
	}
	if s.conn.settle(ctx, s.fc, err) {
		s.conn.forget(query)
	}
	return err
}

// Exec runs a statement that returns no rows. It goes the driver's query
// way: Exec asks the server for the count of rows affected afterwards, one
// more round trip of the few a write costs (infra/docs/measurements.md), for a
// count nothing here reads. The commit of a write's transaction goes with
// its last statement when commitWith allows it (as Session.Write's does).
func (s *Session) Exec(ctx context.Context, query string, args []any, last bool) error {
	_, rows, err := s.openCommitting(ctx, query, args, last && !s.reads && s.commitWith())
	if err != nil {
		return s.outcome(ctx, err)
	}
	if err := rows.Close(); err != nil {
		return s.outcome(ctx, s.failed(ctx, query, err))
	}
	return nil
}

// outcome is err, a statement's failure, as calls.Tx says: the database's
// refusal an *erp.Exception, anything else as it is (Transact classifies it).
func (s *Session) outcome(ctx context.Context, err error) error {
	var exc *erp.Exception
	if err != nil && !errors.As(err, &exc) && !lockWaited(err) {
		if e, ok := classify(ctx, phase(s.at.Load()), err).(*erp.Exception); ok {
			return e
		}
	}
	return err
}

// open prepares query (once per connection) and runs it with args.
func (s *Session) open(ctx context.Context, query string, args []any) (driver.Rows, error) {
	_, rows, err := s.openCommitting(ctx, query, args, false)
	return rows, err
}

// openCommitting is open that, with commit, sends the transaction's
// commit with the statement (firebirdsql.CommitWith): from then on, until
// the answer comes, the call's outcome is unknown.
func (s *Session) openCommitting(ctx context.Context, query string, args []any, commit bool) (*stmt, driver.Rows, error) {
	st, err := s.prepare(ctx, query)
	if err != nil {
		return nil, nil, err
	}
	if commit {
		s.at.Store(int32(committing))
		ctx = firebirdsql.CommitWith(ctx)
	}
	s.began = time.Now()
	rows, err := run(ctx, st, args)
	if err != nil {
		return nil, nil, s.failed(ctx, query, err)
	}
	return st, rows, nil
}

// run runs a prepared statement with args. Every statement goes the
// driver's query way, rows or not (Session.Exec says why).
func run(ctx context.Context, st *stmt, args []any) (driver.Rows, error) {
	qc, ok := st.Stmt.(driver.StmtQueryContext)
	if !ok {
		return nil, errors.New("firebird: statement cannot query with a context")
	}
	return qc.QueryContext(ctx, named(args))
}

// Query runs a statement and encodes its rows into out, less their last
// hidden columns, which are not the answer's: it returns those of the last
// row, each nil (NULL) when there is none. With commit, the transaction's
// commit goes with it (openCommitting).
func (s *Session) Query(ctx context.Context, query string, args []any, out *record.Encoder, hidden int, commit bool) (last []driver.Value, err error) {
	err = s.query(ctx, query, args, commit, func(st *stmt, rows driver.Rows) (err error) {
		last, err = collect(rows, out, st.layout(rows, hidden))
		return err
	})
	return last, err
}

// query runs a statement and hands it and its rows to consume.
func (s *Session) query(ctx context.Context, query string, args []any, commit bool, consume func(*stmt, driver.Rows) error) error {
	st, rows, err := s.openCommitting(ctx, query, args, commit)
	if err != nil {
		return err
	}
	if err := consume(st, rows); err != nil {
		// Past an answer's limits the rest is not fetched: closing the
		// cursor tells the server to stop.
		if s.conn.settle(ctx, s.fc, err) {
			rows.Close() //nolint:errcheck // the fetch's error is the one to report
		}
		return s.failed(ctx, query, err)
	}
	// Closes the cursor and keeps the statement for the next call.
	if err := rows.Close(); err != nil {
		return s.failed(ctx, query, err)
	}
	return nil
}

func named(args []any) []driver.NamedValue {
	nv := make([]driver.NamedValue, len(args))
	for i, a := range args {
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	return nv
}

func selectSQL(procedure string, n int) string {
	return "SELECT * FROM " + calls.QuoteProcedure(procedure) + placeholders(n)
}

func placeholders(n int) string {
	if n == 0 {
		return ""
	}
	return "(" + strings.Repeat("?, ", n-1) + "?)"
}

// Row runs query and returns its first row, nil when there is none.
func (s *Session) Row(ctx context.Context, query string, args []any) ([]any, error) {
	row, err := s.row(ctx, query, args)
	if err != nil || row == nil {
		return nil, s.outcome(ctx, err)
	}
	out := make([]any, len(row))
	for i, v := range row {
		out[i] = v
	}
	return out, nil
}

// row is Row in the driver's values.
func (s *Session) row(ctx context.Context, query string, args []any) ([]driver.Value, error) {
	rows, err := s.open(ctx, query, args)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	vals := make([]driver.Value, len(rows.Columns()))
	switch err := rows.Next(vals); {
	case errors.Is(err, io.EOF):
		return nil, nil
	case err != nil:
		return nil, s.failed(ctx, query, err)
	}
	return vals, nil
}

// collect encodes every row as it is fetched into out, as l lays it out,
// and returns the hidden columns of the last row; a procedure's exception
// can arrive with the first fetch rather than with the execute.
func collect(rows driver.Rows, out *record.Encoder, l *layout) (last []driver.Value, err error) {
	out.Columns(l.cols)
	last = make([]driver.Value, len(l.dest)-l.shown)
	for {
		if err := rows.Next(l.dest); err != nil {
			if errors.Is(err, io.EOF) {
				return last, nil
			}
			return nil, err
		}
		for i, d := range l.at {
			v := l.dest[d]
			if v == nil && l.long[i] >= 0 {
				v = l.dest[l.long[i]]
			}
			l.row[i] = atScale(v, l.digits[i])
		}
		if err := out.Row(l.row); err != nil {
			return nil, err
		}
		copy(last, l.dest[l.shown:])
	}
}

// layout is how a statement's rows make an answer's, the same for every
// run of the statement: worked out once (stmt.layout), where each run
// took a kilobyte or two of allocations for it. A column named longColumn
// is not the answer's: it carries the column before it, in the rows where
// that one could not (read.go). The last hidden columns are not the
// answer's either.
type layout struct {
	hidden, shown int
	cols          []record.Column
	// at and long: each answer column's driver column, and its long one
	// (-1: none); digits: its scale when it is a double kept at one (scaleOf).
	at, long, digits []int
	// dest and row: a fetched row's values, and the answer's; a statement
	// runs one call at a time, on its connection.
	dest []driver.Value
	row  []any
}

// layout is st's layout of rows with hidden last columns.
func (st *stmt) layout(rows driver.Rows, hidden int) *layout {
	if l := st.laid; l != nil && l.hidden == hidden {
		return l
	}
	names := rows.Columns()
	shown := max(len(names)-hidden, 0)
	l := &layout{hidden: hidden, shown: shown, cols: make([]record.Column, 0, shown),
		at: make([]int, 0, shown), long: make([]int, 0, shown), digits: make([]int, 0, shown), dest: make([]driver.Value, len(names))}
	for i, name := range names[:shown] {
		if name == longColumn && len(l.cols) > 0 {
			l.cols[len(l.cols)-1].Kind, l.long[len(l.long)-1] = kindOf(rows, i), i
			continue
		}
		l.cols = append(l.cols, record.Column{Name: name, Kind: kindOf(rows, i)})
		l.at, l.long, l.digits = append(l.at, i), append(l.long, -1), append(l.digits, scaleOf(rows, i))
	}
	l.row = make([]any, len(l.cols))
	st.laid = l
	return l
}

func kindOf(rows driver.Rows, i int) record.Kind {
	tn, ok := rows.(driver.RowsColumnTypeDatabaseTypeName)
	if !ok {
		return record.Text
	}
	switch tn.ColumnTypeDatabaseTypeName(i) {
	case "SHORT", "LONG", "INT64", "INT128":
		if ps, ok := rows.(driver.RowsColumnTypePrecisionScale); ok {
			if _, scale, ok := ps.ColumnTypePrecisionScale(i); ok && scale < 0 {
				return record.Decimal
			}
		}
		return record.Integer
	case "DECFLOAT", "DEC16", "DEC34":
		return record.Decimal
	case "DOUBLE", "D_FLOAT":
		if scaleOf(rows, i) > 0 {
			return record.Decimal
		}
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

// scaleOf is the scale of column i when it is a DOUBLE PRECISION the
// database declares with one: a NUMERIC or DECIMAL of more than 9 digits in
// a SQL dialect 1 database, which Firebird keeps as a double. Its values
// are answered at that scale, as Firebird's own CAST to text and isql write
// them (atScale), where the shortest float answered 411522.62999999995 for
// a NUMERIC(15,2)'s 411522.63, and a batch passed that on to a NUMERIC(15,2)
// parameter, which refused it. 0 for any other column. The driver gives
// every column's scale, though it says ok only for the integer types'.
func scaleOf(rows driver.Rows, i int) int {
	tn, named := rows.(driver.RowsColumnTypeDatabaseTypeName)
	ps, scaled := rows.(driver.RowsColumnTypePrecisionScale)
	if !named || !scaled {
		return 0
	}
	if t := tn.ColumnTypeDatabaseTypeName(i); t != "DOUBLE" && t != "D_FLOAT" {
		return 0
	}
	_, scale, _ := ps.ColumnTypePrecisionScale(i)
	return int(max(-scale, 0))
}

// atScale is v written with digits decimals when it is a double of a
// column scaleOf gives a scale: an exact decimal for the answer. A double
// of 15 digits or more before the point has none to spare for decimals,
// and is answered as a double is (its shortest form; NaN and infinities
// null). A value that rounds to zero is 0.00, never -0.00.
func atScale(v driver.Value, digits int) driver.Value {
	f, ok := v.(float64)
	if !ok || digits <= 0 || !(math.Abs(f) < 1e15) {
		return v
	}
	s := strconv.FormatFloat(f, 'f', digits, 64)
	if s[0] == '-' && strings.Trim(s, "-0.") == "" {
		s = s[1:]
	}
	return s
}
