package thirdparty

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/fbtest"
)

// driverConn is the driver's connection as shared/firebird holds it.
type driverConn interface {
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.QueryerContext
}

// firstValue runs st (or query, when st is nil) and returns its first row's
// first value, closing its rows.
func firstValue(ctx context.Context, fc driverConn, st driver.Stmt, query string, args ...any) (driver.Value, error) {
	named := make([]driver.NamedValue, len(args))
	for i, a := range args {
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	var rows driver.Rows
	var err error
	if st != nil {
		rows, err = st.(driver.StmtQueryContext).QueryContext(ctx, named)
	} else {
		rows, err = fc.QueryContext(ctx, query, named)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	dest := make([]driver.Value, len(rows.Columns()))
	if err := rows.Next(dest); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	if len(dest) == 0 {
		return nil, nil
	}
	return dest[0], nil
}

// TestBeginWithTheFirstStatement holds patch 0005 against Firebird: a
// transaction begins with its first execute, in its round trip, naming the
// transaction by the lazy port's last-object handle; one with no statement
// costs nothing to end; an execute that creates objects of its own first
// (a BLOB argument) begins apart. A begin the server refuses is the
// statement's error and writes nothing, and while another transaction of
// the connection is alive the begin goes apart: a refused begin then cannot
// make the handle name that transaction.
func TestBeginWithTheFirstStatement(t *testing.T) {
	cfg := fbtest.Demo(t)
	fbtest.KeyTable(t, cfg)
	db, c := countedDBOf(t, cfg, "")
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	run := time.Now().UnixNano()
	key := func(i int) string { return fmt.Sprintf("%d-%d", run, i) }
	kept := func(i int) bool {
		var n int
		if err := fbtest.Open(t, cfg).QueryRowContext(ctx, "SELECT COUNT(*) FROM GATEWAY_IDEMPOTENCY WHERE SCOPE = 'begintest' AND IDEM_KEY = ?", key(i)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	err = conn.Raw(func(dc any) error {
		fc := dc.(driverConn)
		// The statement prepared in a transaction of its own, and kept.
		tx, err := fc.BeginTx(ctx, driver.TxOptions{})
		if err != nil {
			return err
		}
		st, err := fc.PrepareContext(ctx, "EXECUTE BLOCK (K VARCHAR(255) = ?) RETURNS (N INTEGER) AS BEGIN INSERT INTO GATEWAY_IDEMPOTENCY (SCOPE, IDEM_KEY, CLAVE, REQUEST_HASH, CREATED_AT) VALUES ('begintest', :K, 'test', 'h', CURRENT_TIMESTAMP); N = 1; SUSPEND; END")
		if err != nil {
			return err
		}
		defer st.Close()
		if err := tx.Rollback(); err != nil {
			return err
		}
		write := func(i int) error {
			tx, err := fc.BeginTx(ctx, driver.TxOptions{})
			if err != nil {
				return err
			}
			if _, err := firstValue(ctx, fc, st, "", key(i)); err != nil {
				tx.Rollback() //nolint:errcheck // the statement's error is the one
				return err
			}
			return tx.Commit()
		}
		if trips := c.during(func() { err = write(1) }); err != nil || trips != 2 || !kept(1) {
			t.Errorf("begin, execute and fetch, then commit: %v in %d round trips, want 2", err, trips)
		}
		if trips := c.during(func() {
			tx, err := fc.BeginTx(ctx, driver.TxOptions{})
			if err == nil {
				err = tx.Commit()
			}
			if err != nil {
				t.Error(err)
			}
		}); trips != 0 {
			t.Errorf("a transaction with no statement: %d round trips", trips)
		}

		// A BLOB argument is created in the transaction before the execute.
		var n driver.Value
		if trips := c.during(func() {
			tx, err := fc.BeginTx(ctx, driver.TxOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck // it only reads
			n, err = firstValue(ctx, fc, nil, "SELECT CHAR_LENGTH(CAST(? AS BLOB SUB_TYPE TEXT CHARACTER SET UTF8)) FROM RDB$DATABASE", strings.Repeat("ñ", 40000))
			if err != nil {
				t.Error(err)
			}
		}); fmt.Sprint(n) != "40000" || trips < 3 {
			t.Errorf("a BLOB argument: %v characters in %d round trips", n, trips)
		}

		// A refused begin: the statement's error, nothing written, the
		// connection serving the next transaction.
		c.refuseBegin.Store(true)
		err = write(2)
		if err == nil || !strings.Contains(err.Error(), "transaction parameter block") || kept(2) {
			t.Errorf("a refused begin: %v, key kept %v", err, kept(2))
		}
		if err := write(3); err != nil || !kept(3) {
			t.Errorf("after a refused begin: %v", err)
		}

		// Another transaction alive on the connection (its own, begun by a
		// statement outside any transaction): the begin goes apart, and a
		// refused one leaves that transaction as it was.
		if _, err := firstValue(ctx, fc, nil, "SELECT 1 FROM RDB$DATABASE"); err != nil {
			return err
		}
		if trips := c.during(func() { err = write(4) }); err != nil || trips != 3 {
			t.Errorf("beside another transaction: %v in %d round trips, want 3 (the begin apart)", err, trips)
		}
		c.refuseBegin.Store(true)
		if err := write(5); err == nil || kept(5) {
			t.Errorf("a refused begin beside another transaction: %v, key kept %v", err, kept(5))
		}
		if _, err := firstValue(ctx, fc, nil, "SELECT 1 FROM RDB$DATABASE"); err != nil {
			t.Errorf("the other transaction after the refused begin: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
