package thirdparty

import (
	"context"
	"database/sql"
	"strings"
	"testing"
)

// TestBlobInOneRoundTrip holds patch 0007 against Firebird: a BLOB of a
// row is opened and its first segments asked for in one round trip, and
// its close and the cursor's free go with the next request; a BLOB longer
// than one answer still arrives whole; an open the server refuses is the
// read's error, and the connection serves the next read.
func TestBlobInOneRoundTrip(t *testing.T) {
	db, c := countedDB(t, "")
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // it only reads
	// Five pieces of n characters each, one BLOB.
	read, err := tx.PrepareContext(ctx, "SELECT CAST(LPAD('', ?, 'a') AS BLOB SUB_TYPE TEXT) || LPAD('', ?, 'b') || LPAD('', ?, 'c') || LPAD('', ?, 'd') || LPAD('', ?, 'e') FROM RDB$DATABASE")
	if err != nil {
		t.Fatal(err)
	}
	defer read.Close()
	want := func(n int) string {
		return strings.Repeat("a", n) + strings.Repeat("b", n) + strings.Repeat("c", n) + strings.Repeat("d", n) + strings.Repeat("e", n)
	}
	readBlob := func(n int) (string, error) {
		var got string
		err := read.QueryRowContext(ctx, n, n, n, n, n).Scan(&got)
		return got, err
	}
	if got, err := readBlob(1); got != want(1) || err != nil {
		t.Fatalf("warming: %q, %v", got, err)
	}
	tests := []struct {
		name  string
		n     int
		trips int64
	}{
		// The execute with its fetch, then the open with the first
		// segment's request.
		{"a short BLOB", 10, 2},
		// 40,000 bytes: the first answer holds 32,000, a second request
		// the rest.
		{"a BLOB longer than one answer", 8000, 3},
	}
	for _, tt := range tests {
		var got string
		trips := c.during(func() { got, err = readBlob(tt.n) })
		if got != want(tt.n) || err != nil || trips != tt.trips {
			t.Errorf("%s: %d characters, %v, in %d round trips, want %d characters in %d", tt.name, len(got), err, trips, 5*tt.n, tt.trips)
		}
	}

	c.refuseBlob.Store(true)
	_, err = readBlob(10)
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "blob") {
		t.Errorf("a refused open: %v", err)
	}
	if got, err := readBlob(10); got != want(10) || err != nil {
		t.Errorf("after a refused open: %d characters, %v", len(got), err)
	}
}
