package thirdparty

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nakagami/firebirdsql"

	"github.com/erp-gateway/gateway/shared/fbtest"
)

// TestCommitWithTheStatement holds patch 0006 against Firebird: a write
// whose statement runs with firebirdsql.CommitWith is its begin, execute,
// fetch and commit in one round trip, and Commit reports the commit sent
// with it; a statement that fails is undone and its transaction's commit
// keeps nothing of it; an EXECUTE BLOCK without outputs (op_execute2)
// commits the same way; a commit the database refuses leaves the
// transaction to Rollback, which ends it; a query whose rows go past its
// first fetch fails, its transaction committed.
func TestCommitWithTheStatement(t *testing.T) {
	cfg := fbtest.Demo(t)
	fbtest.KeyTable(t, cfg)
	ctx := context.Background()
	admin := fbtest.Open(t, fbtest.Admin(t, cfg))
	if _, err := admin.ExecContext(ctx, `CREATE OR ALTER TRIGGER TEST_REFUSE_COMMIT ON TRANSACTION COMMIT AS BEGIN
		IF (RDB$GET_CONTEXT('USER_TRANSACTION', 'REFUSE_COMMIT') = '1') THEN EXCEPTION REST_ERROR 'commit refused';
	END`); err != nil {
		t.Fatal(err)
	}
	// Database triggers load with an attachment: created before ours.
	t.Cleanup(func() { admin.ExecContext(ctx, "DROP TRIGGER TEST_REFUSE_COMMIT") }) //nolint:errcheck // the next run replaces it
	db, c := countedDBOf(t, cfg, "")
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	run := time.Now().UnixNano()
	key := func(i int) string { return fmt.Sprintf("%d-%d", run, i) }
	kept := func(i int) bool {
		var n int
		if err := fbtest.Open(t, cfg).QueryRowContext(ctx, "SELECT COUNT(*) FROM GATEWAY_IDEMPOTENCY WHERE SCOPE = 'committest' AND IDEM_KEY = ?", key(i)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	const insert = "INSERT INTO GATEWAY_IDEMPOTENCY (SCOPE, IDEM_KEY, CLAVE, REQUEST_HASH, CREATED_AT) VALUES ('committest', :K, 'test', 'h', CURRENT_TIMESTAMP);"
	blocks := map[string]string{
		// The work, then its one row.
		"write": "EXECUTE BLOCK (K VARCHAR(255) = ?) RETURNS (N INTEGER) AS BEGIN " + insert + " N = 1; SUSPEND; END",
		// The work, then a refusal before any row: a conversion error.
		"refused": "EXECUTE BLOCK (K VARCHAR(255) = ?) RETURNS (N INTEGER) AS BEGIN " + insert + " N = CAST('not a number' AS INTEGER); SUSPEND; END",
		// No outputs: answered by its execute.
		"procedure": "EXECUTE BLOCK (K VARCHAR(255) = ?) AS BEGIN " + insert + " END",
		// A write whose commit the database refuses (TEST_REFUSE_COMMIT).
		"commit refused": "EXECUTE BLOCK (K VARCHAR(255) = ?) RETURNS (N INTEGER) AS BEGIN " + insert + " N = RDB$SET_CONTEXT('USER_TRANSACTION', 'REFUSE_COMMIT', '1'); SUSPEND; END",
		// 500 rows, then the work.
		"long": "EXECUTE BLOCK (K VARCHAR(255) = ?) RETURNS (N INTEGER) AS BEGIN N = 0; WHILE (N < 5000) DO BEGIN N = N + 1; SUSPEND; END " + insert + " END",
	}
	err = conn.Raw(func(dc any) error {
		fc := dc.(driverConn)
		stmts := map[string]driver.Stmt{}
		tx, err := fc.BeginTx(ctx, driver.TxOptions{})
		if err != nil {
			return err
		}
		for name, text := range blocks {
			if stmts[name], err = fc.PrepareContext(ctx, text); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			defer stmts[name].Close()
		}
		if err := tx.Rollback(); err != nil {
			return err
		}
		// write runs block in a transaction of its own, its commit sent
		// with it: the statement's error, then Commit's.
		write := func(block string, i int) (stmtErr, commitErr error) {
			tx, err := fc.BeginTx(ctx, driver.TxOptions{})
			if err != nil {
				return err, nil
			}
			_, stmtErr = firstValue(firebirdsql.CommitWith(ctx), fc, stmts[block], "", key(i))
			commitErr = tx.Commit()
			return stmtErr, commitErr
		}
		var stmtErr, commitErr error
		if trips := c.during(func() { stmtErr, commitErr = write("write", 1) }); stmtErr != nil || commitErr != nil || trips != 1 || !kept(1) {
			t.Errorf("a write with its commit: %v, %v in %d round trips, want 1", stmtErr, commitErr, trips)
		}
		if trips := c.during(func() { stmtErr, commitErr = write("refused", 2) }); stmtErr == nil || !strings.Contains(stmtErr.Error(), "not a number") || commitErr != nil || trips != 1 || kept(2) {
			t.Errorf("a refused write with its commit: %v, %v in %d round trips, key kept %v", stmtErr, commitErr, trips, kept(2))
		}
		if trips := c.during(func() { stmtErr, commitErr = write("procedure", 3) }); stmtErr != nil || commitErr != nil || trips != 1 || !kept(3) {
			t.Errorf("an EXECUTE BLOCK without outputs with its commit: %v, %v in %d round trips, want 1", stmtErr, commitErr, trips)
		}
		// The commit refused: the statement's error and Commit's; the
		// transaction, still open, ended by Rollback.
		tx, err = fc.BeginTx(ctx, driver.TxOptions{})
		if err != nil {
			return err
		}
		_, stmtErr = firstValue(firebirdsql.CommitWith(ctx), fc, stmts["commit refused"], "", key(6))
		if stmtErr == nil || !strings.Contains(stmtErr.Error(), "commit refused") {
			t.Errorf("a commit refused: %v", stmtErr)
		}
		if err := tx.Rollback(); err != nil || kept(6) {
			t.Errorf("rolled back after its commit was refused: %v, key kept %v", err, kept(6))
		}

		stmtErr, commitErr = write("long", 4)
		if stmtErr == nil || !strings.Contains(stmtErr.Error(), "first fetch") || commitErr == nil {
			t.Errorf("rows past the first fetch: %v, then %v", stmtErr, commitErr)
		}
		// The connection serves on.
		if stmtErr, commitErr = write("write", 5); stmtErr != nil || commitErr != nil || !kept(5) {
			t.Errorf("after: %v, %v", stmtErr, commitErr)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
