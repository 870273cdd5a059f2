package thirdparty

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/erp-gateway/gateway/shared/fbtest"
)

// TestLateRefusals holds patch 0007 against Firebird: a request whose
// answer is read late (a statement's free) and that the server refuses
// leaves its connection out of the pool, the statement read after it
// answered as it should; and when the refusal says the attachment was shut
// down (a DBA's kill), the next statement's error says so, not what the
// shut-down attachment made of it ("Attempt to reopen an open cursor").
func TestLateRefusals(t *testing.T) {
	db, c := countedDB(t, "")
	ctx := context.Background()
	one := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) (int, error) {
		var n int
		err := q.QueryRowContext(ctx, "SELECT 1 FROM RDB$DATABASE").Scan(&n)
		return n, err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := one(tx); n != 1 || err != nil {
		t.Fatalf("warming: %d, %v", n, err)
	}
	// The read's free goes with the next request: spoiled, it is refused.
	c.refuseLate.Store(true)
	if n, err := one(tx); n != 1 || err != nil {
		t.Errorf("the statement after a refused free: %d, %v", n, err)
	}
	if err := tx.Commit(); err != nil {
		t.Errorf("the transaction after a refused free: %v", err)
	}
	dials := c.dials()
	if n, err := one(db); n != 1 || err != nil || c.dials() != dials+1 {
		t.Errorf("after a refused free: %d, %v, %d connections dialed, want a new one", n, err, c.dials()-dials)
	}

	admin := fbtest.Open(t, fbtest.Admin(t, fbtest.Demo(t)))
	tx, err = db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := tx.PrepareContext(ctx, "SELECT CURRENT_CONNECTION FROM RDB$DATABASE")
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := st.QueryRowContext(ctx).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.ExecContext(ctx, "DELETE FROM MON$ATTACHMENTS WHERE MON$ATTACHMENT_ID = ?", id); err != nil {
		t.Fatal(err)
	}
	err = st.QueryRowContext(ctx).Scan(&id)
	if err == nil || !strings.Contains(err.Error(), "shutdown") {
		t.Errorf("the statement after its attachment was killed: %v", err)
	}
	st.Close()
	tx.Rollback() //nolint:errcheck // its attachment is gone
	if n, err := one(db); n != 1 || err != nil {
		t.Errorf("after the kill: %d, %v", n, err)
	}
}
