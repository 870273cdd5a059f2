package thirdparty

import (
	"context"
	"database/sql/driver"
	"testing"

	"github.com/erp-gateway/gateway/shared/fbtest"
)

// TestRollbackLater holds patch 0019 against Firebird: a read-only
// transaction ended by RollbackLater costs no round trip; its rollback goes
// with the next statement, which begins another transaction in that same
// round trip and sees nothing the ended one kept for itself (its
// USER_TRANSACTION context, its global temporary table's rows); the
// server has ended the first by then (MON$TRANSACTIONS); and a database's
// ON TRANSACTION COMMIT trigger that refuses such a transaction's commit
// leaves the connection as it was (a commit would have been refused).
func TestRollbackLater(t *testing.T) {
	cfg := fbtest.Demo(t)
	fbtest.Setup(t, cfg,
		`RECREATE GLOBAL TEMPORARY TABLE TEST_GTT_LATER (X INTEGER) ON COMMIT DELETE ROWS`,
		`GRANT SELECT, INSERT ON TEST_GTT_LATER TO GATEWAY`,
		// Only for the transactions that ask for it.
		`CREATE OR ALTER TRIGGER TEST_LATER_COMMIT ON TRANSACTION COMMIT AS BEGIN
			IF (RDB$GET_CONTEXT('USER_TRANSACTION', 'LATER') IS NOT NULL) THEN EXCEPTION REST_ERROR 'no commit';
		END`)
	admin := fbtest.Open(t, fbtest.Admin(t, cfg))
	// A database trigger runs in every attachment made while it exists.
	t.Cleanup(func() { admin.Exec("DROP TRIGGER TEST_LATER_COMMIT") }) //nolint:errcheck // the next run replaces it
	db, c := countedDBOf(t, cfg, "")
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		fc := dc.(driverConn)
		tx, err := fc.BeginTx(ctx, driver.TxOptions{Isolation: driver.IsolationLevel(2), ReadOnly: true}) // READ COMMITTED
		if err != nil {
			return err
		}
		later, ok := tx.(interface{ RollbackLater() error })
		if !ok {
			t.Fatalf("%T has no RollbackLater", tx)
		}
		// What a transaction keeps for itself: its number, a context
		// variable, a temporary table's rows (read-only transactions may
		// write both).
		const state = `EXECUTE BLOCK RETURNS (T BIGINT, V VARCHAR(10), N BIGINT) AS BEGIN
			T = CURRENT_TRANSACTION; V = RDB$GET_CONTEXT('USER_TRANSACTION', 'LATER');
			RDB$SET_CONTEXT('USER_TRANSACTION', 'LATER', 'kept');
			INSERT INTO TEST_GTT_LATER VALUES (1); SELECT COUNT(*) FROM TEST_GTT_LATER INTO N; SUSPEND; END`
		st, err := fc.PrepareContext(ctx, state)
		if err != nil {
			return err
		}
		defer st.Close()
		read := func() (id int64, v any, n int64) {
			rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			dest := make([]driver.Value, 3)
			if err := rows.Next(dest); err != nil {
				t.Fatal(err)
			}
			return dest[0].(int64), dest[1], dest[2].(int64)
		}
		first, v, n := read()
		if v != nil || n != 1 {
			t.Fatalf("a new transaction: context %v, %d rows", v, n)
		}
		if trips := c.during(func() { err = later.RollbackLater() }); err != nil || trips != 0 {
			t.Fatalf("RollbackLater: %v in %d round trips, want none", err, trips)
		}
		var second int64
		if trips := c.during(func() { second, v, n = read() }); trips != 1 {
			t.Errorf("the rollback, the next transaction's begin and its read: %d round trips, want 1", trips)
		}
		if second == first || v != nil || n != 1 {
			t.Errorf("after RollbackLater: transaction %d (the first was %d), context %v, %d rows: want another transaction, nothing kept", second, first, v, n)
		}
		if valid, ok := dc.(driver.Validator); !ok || !valid.IsValid() {
			t.Errorf("the connection is no longer valid after the transaction's end")
		}
		var alive int
		if err := admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM MON$TRANSACTIONS WHERE MON$TRANSACTION_ID = ?", first).Scan(&alive); err != nil || alive != 0 {
			t.Errorf("the first transaction: %d alive (%v), want ended", alive, err)
		}
		return tx.Rollback()
	})
	if err != nil {
		t.Fatal(err)
	}
}
