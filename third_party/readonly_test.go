package thirdparty

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/erp-gateway/gateway/shared/fbtest"
)

// TestReadOnlyKeepsItsIsolation holds patch 0016 against Firebird: a
// read-only transaction asked for a snapshot is SNAPSHOT READ ONLY (as
// released it was READ COMMITTED READ ONLY, whatever was asked), refuses a
// write, and sees the moment it began; the other read-only levels are as
// before.
func TestReadOnlyKeepsItsIsolation(t *testing.T) {
	cfg := fbtest.Demo(t)
	fbtest.Setup(t, cfg,
		`RECREATE TABLE TEST_SOLO_LECTURA (N INTEGER)`,
		`GRANT ALL ON TEST_SOLO_LECTURA TO GATEWAY`)
	ctx := context.Background()
	for i, c := range []struct {
		level     sql.IsolationLevel
		isolation int // MON$ISOLATION_MODE: 1 snapshot, 2 read committed
	}{
		{sql.LevelRepeatableRead, 1},
		{sql.LevelSnapshot, 1},
		{sql.LevelReadCommitted, 2},
		{sql.LevelDefault, 2},
	} {
		t.Run(c.level.String(), func(t *testing.T) {
			db, _ := countedDB(t, "")
			tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: c.level, ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			var readOnly, isolation int
			if err := tx.QueryRowContext(ctx, `SELECT MON$READ_ONLY, MON$ISOLATION_MODE FROM MON$TRANSACTIONS WHERE MON$TRANSACTION_ID = CURRENT_TRANSACTION`).Scan(&readOnly, &isolation); err != nil {
				t.Fatal(err)
			}
			if readOnly != 1 || isolation != c.isolation {
				t.Fatalf("read only %d, isolation mode %d; want 1 and %d", readOnly, isolation, c.isolation)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO TEST_SOLO_LECTURA VALUES (1)`); err == nil || !strings.Contains(err.Error(), "read-only transaction") {
				t.Fatalf("a write in it: %v", err)
			}
			// A row committed by another transaction after it began is
			// seen by READ COMMITTED only.
			admin := fbtest.Open(t, fbtest.Admin(t, cfg))
			if _, err := admin.ExecContext(ctx, `INSERT INTO TEST_SOLO_LECTURA VALUES (?)`, 10+i); err != nil {
				t.Fatal(err)
			}
			var seen int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM TEST_SOLO_LECTURA WHERE N = ?`, 10+i).Scan(&seen); err != nil {
				t.Fatal(err)
			}
			if want := map[int]int{1: 0, 2: 1}[c.isolation]; seen != want {
				t.Fatalf("%d rows committed after it began seen, want %d", seen, want)
			}
		})
	}
}
