package thirdparty

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestPrepareInOneRoundTrip holds patch 0003 against Firebird: a prepare
// asks for both descriptions with a buffer of 64 KB, so a 50-column
// procedure's prepare is one round trip and its first execute asks
// nothing more; a description over 64 KB still arrives whole, in
// continuations, for the columns (the select) and for the parameters
// (the bind).
func TestPrepareInOneRoundTrip(t *testing.T) {
	db, c := countedDB(t, "")
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // it only reads
	// The transaction begins with its first statement (patch 0005).
	if _, err := tx.ExecContext(ctx, "SELECT 1 FROM RDB$DATABASE"); err != nil {
		t.Fatal(err)
	}
	// Its statement's free is sent without waiting: the ping's answer
	// comes after it, so the prepare below starts a round trip of its own.
	if err := conn.PingContext(ctx); err != nil {
		t.Fatal(err)
	}

	const wide = "SELECT * FROM REST_SELECT_REFERENCIA(?)"
	var cols []string
	var st interface{ Close() error }
	var rows interface{ Close() error }
	trips := c.during(func() {
		prepared, err := tx.PrepareContext(ctx, wide)
		if err != nil {
			t.Fatal(err)
		}
		st = prepared
		rs, err := prepared.QueryContext(ctx, "REF0001")
		if err != nil {
			t.Fatal(err)
		}
		rows = rs
		if cols, err = rs.Columns(); err != nil {
			t.Fatal(err)
		}
	})
	rows.Close()
	st.Close()
	if len(cols) != 50 {
		t.Fatalf("%d columns", len(cols))
	}
	// The prepare, then the execute: nothing in between asks for the
	// parameters' description.
	if trips != 2 {
		t.Errorf("prepare and execute of a 50-column procedure: %d round trips, want 2", trips)
	}

	// 1,000 columns with long names: their description is over 64 KB.
	var sel []string
	for i := range 1000 {
		sel = append(sel, fmt.Sprintf("CAST(? AS INTEGER) + %d AS A_RATHER_LONG_COLUMN_NAME_%04d", i, i))
	}
	args := make([]any, 1000)
	for i := range args {
		args[i] = 1
	}
	var many int
	trips = c.during(func() {
		rows, err := tx.QueryContext(ctx, "SELECT "+strings.Join(sel, ", ")+" FROM RDB$DATABASE", args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		names, _ := rows.Columns()
		vals := make([]any, len(names))
		ptrs := make([]any, len(names))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if !rows.Next() {
			t.Fatalf("no row: %v", rows.Err())
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		many = len(names)
		if names[999] != "A_RATHER_LONG_COLUMN_NAME_0999" || fmt.Sprint(vals[999]) != "1000" {
			t.Fatalf("the last column: %s = %v", names[999], vals[999])
		}
	})
	if many != 1000 || trips < 3 {
		t.Errorf("%d columns in %d round trips: want 1,000, the description in continuations", many, trips)
	}

	// 2,000 parameters: the bind description is over 64 KB.
	var params, terms []string
	args = make([]any, 2000)
	for i := range args {
		params = append(params, fmt.Sprintf("A_LONG_PARAMETER_NAME_%04d INTEGER = ?", i))
		terms = append(terms, fmt.Sprintf(":A_LONG_PARAMETER_NAME_%04d", i))
		args[i] = i
	}
	block := "EXECUTE BLOCK (" + strings.Join(params, ", ") + ") RETURNS (S BIGINT) AS BEGIN S = " + strings.Join(terms, " + ") + "; SUSPEND; END"
	var s int64
	trips = c.during(func() {
		if err := tx.QueryRowContext(ctx, block, args...).Scan(&s); err != nil || s != 1999*2000/2 {
			t.Fatalf("a block of 2,000 parameters: %d, %v", s, err)
		}
	})
	if trips < 4 {
		t.Errorf("a block of 2,000 parameters in %d round trips: want its bind description in continuations", trips)
	}
}
