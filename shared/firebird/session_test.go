package firebird

import (
	"database/sql/driver"
	"io"
	"math"
	"slices"
	"testing"

	"github.com/erp-gateway/gateway/shared/record"
)

// fakeRows are a statement's rows: its columns, then rows, counting the
// times it was asked for its columns.
type fakeRows struct {
	names   []string
	rows    [][]driver.Value
	columns int
}

func (r *fakeRows) Columns() []string { r.columns++; return r.names }
func (r *fakeRows) Close() error      { return nil }

func (r *fakeRows) Next(dest []driver.Value) error {
	if len(r.rows) == 0 {
		return io.EOF
	}
	copy(dest, r.rows[0])
	r.rows = r.rows[1:]
	return nil
}

// TestLayoutOncePerStatement: a statement works out how its rows make an
// answer once, and again only for another count of hidden columns; each
// run answers the same, a long column filling the one before it where that
// one is NULL.
func TestLayoutOncePerStatement(t *testing.T) {
	names := []string{"CODIGO", "NOTAS", longColumn, "ORIGIN"}
	run := func(st *stmt, hidden int) (*fakeRows, string, []driver.Value) {
		rows := &fakeRows{names: names, rows: [][]driver.Value{
			{"A", "short", nil, "x"},
			{"B", nil, "a long one", "y"},
		}}
		out := record.NewEncoder("", "", record.Limits{})
		last, err := collect(rows, out, st.layout(rows, hidden))
		if err != nil {
			t.Fatal(err)
		}
		return rows, string(out.Finish()), last
	}
	st := &stmt{}
	tests := []struct {
		name    string
		hidden  int
		columns int // the times the rows were asked for their columns
		answer  string
		lastRow []driver.Value
	}{
		{"first run", 1, 1, `[{"CODIGO":"A","NOTAS":"short"},{"CODIGO":"B","NOTAS":"a long one"}]`, []driver.Value{"y"}},
		{"second run", 1, 0, `[{"CODIGO":"A","NOTAS":"short"},{"CODIGO":"B","NOTAS":"a long one"}]`, []driver.Value{"y"}},
		{"no hidden column", 0, 1, `[{"CODIGO":"A","NOTAS":"short","ORIGIN":"x"},{"CODIGO":"B","NOTAS":"a long one","ORIGIN":"y"}]`, []driver.Value{}},
	}
	for _, tt := range tests {
		rows, answer, last := run(st, tt.hidden)
		if rows.columns != tt.columns || answer != tt.answer || !slices.Equal(last, tt.lastRow) {
			t.Errorf("%s: columns asked %d times, answer %s, last %v; want %d, %s, %v", tt.name, rows.columns, answer, last, tt.columns, tt.answer, tt.lastRow)
		}
	}
}

// TestAtScale: a double with a scale (a NUMERIC of SQL dialect 1) is
// written at its scale, rounded to the nearest; one too large for its
// decimals, not a number, or of a column without a scale passes as it came.
func TestAtScale(t *testing.T) {
	tests := []struct {
		v      driver.Value
		digits int
		want   driver.Value
	}{
		{411522.62999999995, 2, "411522.63"},
		{0.30000000000000004, 4, "0.3000"},
		{-7158278.826666667, 2, "-7158278.83"},
		{math.Copysign(0, -1), 2, "0.00"},
		{-0.0033, 2, "0.00"},
		{-0.005000001, 2, "-0.01"},
		{0.1, 2, "0.10"},
		{999999999999999.9, 2, "999999999999999.88"},
		{1e15, 2, 1e15},
		{math.Inf(-1), 2, math.Inf(-1)},
		{0.1, 0, 0.1},
		{int64(3), 2, int64(3)},
		{nil, 2, nil},
	}
	for _, tt := range tests {
		if got := atScale(tt.v, tt.digits); got != tt.want {
			t.Errorf("atScale(%v, %d) = %#v, want %#v", tt.v, tt.digits, got, tt.want)
		}
	}
	if got := atScale(math.NaN(), 2); got == nil || got.(float64) == got.(float64) {
		t.Errorf("atScale(NaN, 2) = %#v, want NaN", got)
	}
}
