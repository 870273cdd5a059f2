package thirdparty

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nakagami/firebirdsql"

	"github.com/erp-gateway/gateway/shared/fbtest"
)

// TestARefusedCommit holds patch 0020 against Firebird: a commit that a
// database trigger ON TRANSACTION COMMIT refuses is a *CommitError, from
// Commit and from the statement the commit went with (CommitWith), and
// never a statement's own refusal; the server keeps the transaction open
// (its CURRENT_TRANSACTION in MON$TRANSACTIONS) until Commit, which reports
// the refusal, has rolled it back, nothing of it written; the connection
// serves on, its next statements in transactions of their own.
func TestARefusedCommit(t *testing.T) {
	cfg := fbtest.Demo(t)
	fbtest.KeyTable(t, cfg)
	fbtest.Setup(t, cfg, `CREATE OR ALTER TRIGGER TEST_COMMIT_REFUSED ON TRANSACTION COMMIT AS BEGIN
		IF (RDB$GET_CONTEXT('USER_TRANSACTION', 'COMMIT_REFUSED') = '1') THEN EXCEPTION REST_ERROR 'commit refused';
	END`)
	ctx := context.Background()
	admin := fbtest.Open(t, fbtest.Admin(t, cfg))
	t.Cleanup(func() { admin.ExecContext(ctx, "DROP TRIGGER TEST_COMMIT_REFUSED") }) //nolint:errcheck // the next run replaces it
	db, _ := countedDBOf(t, cfg, "")
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	run := time.Now().UnixNano()
	// In a transaction of its own: the MON$ tables show the moment it
	// began.
	count := func(q string, args ...any) int {
		tx, err := admin.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback() //nolint:errcheck // it only read
		var n int
		if err := tx.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// write keeps key, refuses the commit when refuse is 1, and fails
	// itself when fail is 1; it answers its transaction's number.
	const write = `EXECUTE BLOCK (K VARCHAR(255) = ?, REFUSE INTEGER = ?, FAIL INTEGER = ?) RETURNS (T BIGINT) AS BEGIN
		INSERT INTO GATEWAY_IDEMPOTENCY (SCOPE, IDEM_KEY, CLAVE, REQUEST_HASH, CREATED_AT) VALUES ('refusedtest', :K, 'test', 'h', CURRENT_TIMESTAMP);
		IF (REFUSE = 1) THEN RDB$SET_CONTEXT('USER_TRANSACTION', 'COMMIT_REFUSED', '1');
		IF (FAIL = 1) THEN T = CAST('not a number' AS INTEGER);
		T = CURRENT_TRANSACTION; SUSPEND; END`
	tests := []struct {
		name         string
		with         bool // the commit sent with the statement
		refuse, fail int
		// The statement's error and Commit's: "" none, "commit" a
		// *CommitError, "statement" the statement's own.
		stmtErr, commitErr string
	}{
		{"Commit, refused", false, 1, 0, "", "commit"},
		{"Commit", false, 0, 0, "", ""},
		{"CommitWith, refused", true, 1, 0, "commit", "commit"},
		{"CommitWith, the statement refused, then the commit", true, 1, 1, "statement", "commit"},
		{"CommitWith", true, 0, 0, "", ""},
	}
	kind := func(err error) string {
		var ce *firebirdsql.CommitError
		var fb *firebirdsql.FbError
		switch {
		case err == nil:
			return ""
		case errors.As(err, &ce) && errors.As(err, &fb) && strings.Contains(err.Error(), "commit refused"):
			return "commit"
		case errors.As(err, &ce):
			return fmt.Sprintf("a CommitError without the server's answer: %v", err)
		case errors.As(err, &fb):
			return "statement"
		}
		return err.Error()
	}
	err = conn.Raw(func(dc any) error {
		fc := dc.(driverConn)
		for i, tt := range tests {
			key := fmt.Sprintf("%d-%d", run, i)
			tx, err := fc.BeginTx(ctx, driver.TxOptions{})
			if err != nil {
				return err
			}
			sctx := ctx
			if tt.with {
				sctx = firebirdsql.CommitWith(ctx)
			}
			id, err := firstValue(ctx, fc, nil, "SELECT CURRENT_TRANSACTION FROM RDB$DATABASE")
			if err != nil {
				return err
			}
			_, stmtErr := firstValue(sctx, fc, nil, write, key, tt.refuse, tt.fail)
			if tt.stmtErr == "commit" && count("SELECT COUNT(*) FROM MON$TRANSACTIONS WHERE MON$TRANSACTION_ID = ?", id) != 1 {
				t.Errorf("%s: transaction %v not open after its commit was refused", tt.name, id)
			}
			commitErr := tx.Commit()
			if kind(stmtErr) != tt.stmtErr || kind(commitErr) != tt.commitErr {
				t.Errorf("%s: the statement's error %v, Commit's %v; want %q, %q", tt.name, stmtErr, commitErr, tt.stmtErr, tt.commitErr)
			}
			// Ended by Commit, refused or not (database/sql never rolls
			// back after a failed Commit).
			if count("SELECT COUNT(*) FROM MON$TRANSACTIONS WHERE MON$TRANSACTION_ID = ?", id) != 0 {
				t.Errorf("%s: transaction %v open after Commit", tt.name, id)
			}
			if err := tx.Rollback(); err != nil {
				t.Errorf("%s: Rollback: %v", tt.name, err)
			}
			if kept := count("SELECT COUNT(*) FROM GATEWAY_IDEMPOTENCY WHERE SCOPE = 'refusedtest' AND IDEM_KEY = ?", key); kept != 0 && tt.commitErr+tt.stmtErr != "" || kept != 1 && tt.commitErr+tt.stmtErr == "" {
				t.Errorf("%s: %d rows written", tt.name, kept)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	// Through database/sql, which never rolls back after a failed Commit:
	// the connection's next statement commits on its own.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := tx.QueryRowContext(ctx, write, fmt.Sprintf("%d-sql", run), 1, 0).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); !errors.As(err, new(*firebirdsql.CommitError)) {
		t.Fatalf("database/sql's Commit: %v", err)
	}
	next := fmt.Sprintf("%d-next", run)
	if _, err := db.ExecContext(ctx, "INSERT INTO GATEWAY_IDEMPOTENCY (SCOPE, IDEM_KEY, CLAVE, REQUEST_HASH, CREATED_AT) VALUES ('refusedtest', ?, 'test', 'h', CURRENT_TIMESTAMP)", next); err != nil {
		t.Fatal(err)
	}
	if n := count("SELECT COUNT(*) FROM GATEWAY_IDEMPOTENCY WHERE SCOPE = 'refusedtest' AND IDEM_KEY = ?", next); n != 1 {
		t.Errorf("the statement after a refused Commit: %d rows committed", n)
	}
	if n := count("SELECT COUNT(*) FROM MON$TRANSACTIONS WHERE MON$TRANSACTION_ID = ?", id); n != 0 {
		t.Errorf("the refused transaction %d open after database/sql's Commit", id)
	}
}
