package fbtest_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/erp-gateway/gateway/shared/fbtest"
)

// recorder keeps what a helper reports as failed, instead of failing.
type recorder struct {
	testing.TB
	failed []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.failed = append(r.failed, fmt.Sprintf(format, args...))
}

// TestAfterLoadBlamesOnlyOthers: AfterLoad's NEXT - OAT does not count the
// test's own connection, whose idle autocommit transaction pinned the
// oldest active one (the check failed when a load's rows took long to
// count while the gateway swept its keys), and still counts a
// transaction someone else keeps open.
func TestAfterLoadBlamesOnlyOthers(t *testing.T) {
	cfg := fbtest.Demo(t)
	admin := fbtest.Open(t, fbtest.Admin(t, cfg))
	other := fbtest.Open(t, fbtest.Admin(t, cfg))
	ctx := context.Background()
	commits := func(db *sql.DB, n int) {
		for range n {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var one int
			if err := tx.QueryRowContext(ctx, "SELECT 1 FROM RDB$DATABASE").Scan(&one); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}

	var one int
	if err := admin.QueryRowContext(ctx, "SELECT 1 FROM RDB$DATABASE").Scan(&one); err != nil {
		t.Fatal(err)
	}
	commits(other, 12)
	r := &recorder{TB: t}
	fbtest.AfterLoad(r, admin)
	if len(r.failed) > 0 {
		t.Errorf("the test's own connection was blamed: %s", r.failed)
	}

	held, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback() //nolint:errcheck // read-only work
	if err := held.QueryRowContext(ctx, "SELECT 1 FROM RDB$DATABASE").Scan(&one); err != nil {
		t.Fatal(err)
	}
	commits(admin, 12)
	r = &recorder{TB: t}
	fbtest.AfterLoad(r, admin)
	if len(r.failed) != 1 || !strings.Contains(r.failed[0], "NEXT - OAT") {
		t.Errorf("a transaction kept open through 12 others: %q, want NEXT - OAT reported", r.failed)
	}
}

// TestOpenWritesSeesThePresent: OpenWrites counts a transaction begun after
// the test's connection first read the monitoring tables (in the driver's
// autocommit transaction it read the same snapshot again, and missed it).
func TestOpenWritesSeesThePresent(t *testing.T) {
	cfg := fbtest.Demo(t)
	admin := fbtest.Open(t, fbtest.Admin(t, cfg))
	admin.SetMaxOpenConns(1) // one connection, as a test's sequential checks use
	before := fbtest.OpenWrites(t, admin)
	gateway := fbtest.Open(t, cfg)
	ctx := context.Background()
	tx, err := gateway.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only work
	var one int
	if err := tx.QueryRowContext(ctx, "SELECT 1 FROM RDB$DATABASE").Scan(&one); err != nil {
		t.Fatal(err)
	}
	if n := fbtest.OpenWrites(t, admin); n != before+1 {
		t.Errorf("%d read-write transactions of the gateway's user open, want %d", n, before+1)
	}
}
