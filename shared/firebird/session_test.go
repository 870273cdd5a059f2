package firebird

import (
	"database/sql/driver"
	"io"
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
