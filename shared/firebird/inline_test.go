package firebird

import (
	"strings"
	"testing"

	"github.com/nakagami/firebirdsql"
)

// TestInlineSelect: which BLOBs a read selects in the row, in what type,
// and none when the other columns leave less room than inlineLeast.
func TestInlineSelect(t *testing.T) {
	const blob, varying = firebirdsql.SQL_TYPE_BLOB, firebirdsql.SQL_TYPE_VARYING
	text := func(name string, charset int) firebirdsql.ColumnType {
		return firebirdsql.ColumnType{Name: name, Type: blob, SubType: 1, Scale: charset, Length: 8}
	}
	binary := firebirdsql.ColumnType{Name: "FOTO", Type: blob, Length: 8}
	code := firebirdsql.ColumnType{Name: "CODIGO", Type: varying, SubType: 4, Length: 80}
	wide := firebirdsql.ColumnType{Name: "ANCHO", Type: varying, SubType: 4, Length: 32764}
	tests := []struct {
		name   string
		cols   []firebirdsql.ColumnType
		utf8   bool
		ok     bool
		has    []string // in the statement
		hasNot []string
	}{
		{"text and binary, UTF8", []firebirdsql.ColumnType{code, text("NOTA", 4), binary}, true, true,
			[]string{`CAST("NOTA" AS VARCHAR(5984) CHARACTER SET UTF8) END AS "NOTA"`, `CAST("FOTO" AS VARCHAR(23936) CHARACTER SET OCTETS)`, `THEN "NOTA" END AS GATEWAY$LONG`}, nil},
		{"text on a connection not in UTF8", []firebirdsql.ColumnType{code, text("NOTA", 53), binary}, false, true,
			[]string{`SELECT "CODIGO", "NOTA", CASE`, `CAST("FOTO" AS VARCHAR(32765) CHARACTER SET OCTETS)`}, []string{`CAST("NOTA"`}},
		{"text in NONE or OCTETS", []firebirdsql.ColumnType{text("N", 0), text("O", 1)}, true, false, nil, nil},
		{"no BLOB", []firebirdsql.ColumnType{code}, true, false, nil, nil},
		{"too little room left", []firebirdsql.ColumnType{wide, wide, binary}, true, false, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := inlineSelect("P", 1, tt.cols, tt.utf8)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v: %s", ok, tt.ok, got)
			}
			for _, s := range tt.has {
				if !strings.Contains(got, s) {
					t.Errorf("%s\nlacks %s", got, s)
				}
			}
			for _, s := range tt.hasNot {
				if strings.Contains(got, s) {
					t.Errorf("%s\nhas %s", got, s)
				}
			}
		})
	}
}
