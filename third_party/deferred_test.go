package thirdparty

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"
)

// TestReadInOneRoundTrip holds patch 0004 against Firebird: a SELECT's
// execute goes with its first fetch, one round trip for a prepared
// statement's answer; the execute's error is the query's, word for word
// what the server says when the execute is sent alone; a procedure's
// exception at the fetch is the query's too; a BLOB argument is created
// before the execute leaves; rows past the first fetch still come; and
// after each failure the connection serves the next query.
func TestReadInOneRoundTrip(t *testing.T) {
	db, c := countedDB(t, "")
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // it only reads
	read, err := tx.PrepareContext(ctx, "SELECT CODIGO FROM REST_SELECT_REFERENCIA(?)")
	if err != nil {
		t.Fatal(err)
	}
	defer read.Close()
	readOne := func(code string) (string, error) {
		var got string
		err := read.QueryRowContext(ctx, code).Scan(&got)
		return strings.TrimSpace(got), err
	}
	if got, err := readOne("REF0001"); got != "REF0001" || err != nil {
		t.Fatalf("warming: %q, %v", got, err)
	}
	var got string
	// The row is read, then the cursor closed: its free is sent with the
	// next request, so the read is one round trip.
	if trips := c.during(func() { got, err = readOne("REF0002") }); trips != 1 || got != "REF0002" || err != nil {
		t.Errorf("a prepared read: %q, %v in %d round trips, want 1", got, err, trips)
	}

	// An execute the server refuses: a block's parameter out of its range.
	const narrow = "EXECUTE BLOCK (X SMALLINT = ?) RETURNS (N INTEGER) AS BEGIN N = :X; SUSPEND; END"
	_, alone := tx.ExecContext(ctx, narrow, 5000000) // the execute alone, as before the patch
	rows, deferred := tx.QueryContext(ctx, narrow, 5000000)
	if deferred == nil {
		rows.Close()
	}
	if alone == nil || deferred == nil || deferred.Error() != alone.Error() {
		t.Errorf("an execute refused: the query says %v, the execute alone %v", deferred, alone)
	}

	// A procedure's exception, raised at the fetch.
	if _, err := readOne("NOPE"); err == nil || !strings.Contains(err.Error(), "***LA REFERENCIA NOPE NO EXISTE***") {
		t.Errorf("a procedure's exception: %v", err)
	}
	if got, err := readOne("REF0003"); got != "REF0003" || err != nil {
		t.Errorf("after the failures: %q, %v", got, err)
	}

	// An argument too long for a VARCHAR goes as a BLOB, created (its own
	// round trips) while the execute's packet is built.
	var chars int
	if err := tx.QueryRowContext(ctx, "SELECT CHAR_LENGTH(CAST(? AS BLOB SUB_TYPE TEXT CHARACTER SET UTF8)) FROM RDB$DATABASE", strings.Repeat("ñ", 40000)).Scan(&chars); err != nil || chars != 40000 {
		t.Errorf("a BLOB argument: %d characters, %v", chars, err)
	}

	// 20,000 rows: the first fetch's, then the rest.
	rows, err = tx.QueryContext(ctx, "SELECT CODIGO FROM REST_SELECT_INVENTARIO_PRECIO(?, '')", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	if rows.Err() != nil || n != 20000 {
		t.Errorf("a bulk read: %d rows, %v", n, rows.Err())
	}
}
