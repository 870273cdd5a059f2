package catalog

import (
	"slices"
	"strings"
	"testing"
)

// TestDiagnoseNamesTheParametersACountDiffersBy: the database's description
// here is written by hand; shared/gateway and infra/catalog compare the same
// with a real database's.
func TestDiagnoseNamesTheParametersACountDiffersBy(t *testing.T) {
	text := func(names ...string) []Param {
		ps := make([]Param, len(names))
		for i, n := range names {
			ps[i] = Param{Name: n, Kind: Text, MaxLen: 10}
		}
		return ps
	}
	varchar := func(names ...string) []DBParam {
		ps := make([]DBParam, len(names))
		for i, n := range names {
			ps[i] = DBParam{Name: n, Type: "VARCHAR", Chars: 10}
		}
		return ps
	}
	defaulted := func(names ...string) []DBParam {
		ps := varchar(names...)
		for i := range ps {
			ps[i].Default = true
		}
		return ps
	}
	type compared struct {
		op Operation
		db map[string]Procedure
	}
	read := func(params []Param, inputs []DBParam) compared {
		return compared{Operation{Clave: "Get_X", Endpoint: ExecuteQuery, Procedure: "P", Params: params},
			map[string]Procedure{"P": {Name: "P", Exists: true, Selectable: true, Executable: true, Inputs: inputs, Outputs: varchar("X")}}}
	}
	write := func(readBack Procedure) compared {
		return compared{Operation{Clave: "Set_X", Endpoint: Execute, Procedure: "W", Params: text("CODIGO"), ReadBack: &ReadBack{Procedure: "R", Params: []string{"CODIGO"}}},
			map[string]Procedure{"W": {Name: "W", Exists: true, Executable: true, Inputs: varchar("P_CODIGO")}, "R": readBack}}
	}
	tests := []struct {
		name string
		in   compared
		want string
	}{
		{"an input added in the middle", read(text("CODIGO", "FECHA_"), varchar("P_CODIGO", "P_MONEDA", "P_FECHA")),
			"P (Get_X): the database declares 3 input parameters, the catalog 2: the catalog has no parameter for P_MONEDA"},
		{"inputs removed", read(text("CODIGO", "MONEDA", "FECHA"), varchar("P_CODIGO")),
			"P (Get_X): the database declares 1 input parameters, the catalog 3: the procedure has no input for the catalog's MONEDA, FECHA"},
		{"every input removed", read(text("CODIGO", "FECHA"), nil),
			"P (Get_X): the database declares 0 input parameters, the catalog 2: the procedure has no input for the catalog's CODIGO, FECHA"},
		{"a read-back's every input removed",
			write(Procedure{Name: "R", Exists: true, Selectable: true, Executable: true}),
			"R (read-back of Set_X): the database declares 0 input parameters, the catalog passes 1: the procedure has no input for the catalog's CODIGO"},
		{"names that do not line up: by position", read(text("A", "B", "C"), varchar("P_X")),
			"P (Get_X): the database declares 1 input parameters, the catalog 3: in order, the procedure has no input for the catalog's B, C"},
		{"names that do not line up, more in the database", read(text("A"), varchar("P_X", "P_Y")),
			"P (Get_X): the database declares 2 input parameters, the catalog 1: in order, the catalog has no parameter for P_Y"},
		{"inputs added with defaults: a call may leave them out", read(text("CODIGO"), append(varchar("P_CODIGO"), defaulted("P_MONEDA", "P_OTRO")...)), ""},
		{"all the inputs passed, the defaulted ones too", read(text("CODIGO", "MONEDA"), append(varchar("P_CODIGO"), defaulted("P_MONEDA")...)), ""},
		{"an input added without a default, before one with",
			read(text("CODIGO"), append(varchar("P_CODIGO", "P_MONEDA"), defaulted("P_OTRO")...)),
			"P (Get_X): the database declares 3 input parameters (the last 1 with a default), the catalog 1: the catalog has no parameter for P_MONEDA"},
		{"more than the defaulted ones allow", read(text("A", "B", "C"), append(varchar("P_A"), defaulted("P_B")...)),
			"P (Get_X): the database declares 2 input parameters (the last 1 with a default), the catalog 3: the procedure has no input for the catalog's C"},
		{"a read-back's defaulted input", write(Procedure{Name: "R", Exists: true, Selectable: true, Executable: true, Inputs: append(varchar("P_CODIGO"), defaulted("P_EMPRESA")...)}), ""},
		{"a read-back's input added",
			write(Procedure{Name: "R", Exists: true, Selectable: true, Executable: true, Inputs: varchar("P_EMPRESA", "P_CODIGO")}),
			"R (read-back of Set_X): the database declares 2 input parameters, the catalog passes 1: the catalog has no parameter for P_EMPRESA"},
		{"a write with SUSPEND that returns no values", compared{Operation{Clave: "Set_X", Endpoint: Execute, Procedure: "W", Params: text("CODIGO")},
			map[string]Procedure{"W": {Name: "W", Exists: true, Selectable: true, Executable: true, Inputs: varchar("P_CODIGO")}}},
			"W (Set_X): it has SUSPEND but returns no values, so nothing can SELECT it, and EXECUTE PROCEDURE would end it at its first SUSPEND, a write cut short: the gateway refuses to run it (declare an output, or drop the SUSPEND)"},
		{"a read-back raising an exception without USAGE",
			write(Procedure{Name: "R", Exists: true, Selectable: true, Executable: true, Inputs: varchar("P_CODIGO"), UngrantedExceptions: []string{"E1", "E2"}}),
			"R (read-back of Set_X): it raises E1, E2 without USAGE, so Firebird refuses to prepare it and every call fails (GRANT USAGE ON EXCEPTION E1 TO PROCEDURE R; GRANT USAGE ON EXCEPTION E2 TO PROCEDURE R)"},
		{"a read's column named as a write block's variables: no block", compared{Operation{Clave: "Get_X", Endpoint: ExecuteQuery, Procedure: "P"},
			map[string]Procedure{"P": {Name: "P", Exists: true, Selectable: true, Executable: true, Outputs: varchar("GATEWAY$P0")}}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, f := range tt.in.op.Diagnose(tt.in.db, "GATEWAY") {
				if !f.Fatal {
					t.Errorf("not fatal: %s", f.Text)
				}
				got = append(got, f.Text)
			}
			var want []string
			if tt.want != "" {
				want = []string{tt.want}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), tt.want)
			}
		})
	}
}

// TestDiagnoseWarnsOfAnAnswerNamedAsTheBlocksVariables: a write's answer
// column named GATEWAY$… may collide with its block's variables (then every
// call fails): a warning naming the procedure whose column it is.
func TestDiagnoseWarnsOfAnAnswerNamedAsTheBlocksVariables(t *testing.T) {
	op := Operation{Clave: "Set_X", Endpoint: Execute, Procedure: "W", ReadBack: &ReadBack{Procedure: "R"}}
	db := map[string]Procedure{
		"W": {Name: "W", Exists: true, Executable: true},
		"R": {Name: "R", Exists: true, Selectable: true, Executable: true, Outputs: []DBParam{{Name: "CODIGO", Type: "INTEGER"}, {Name: "GATEWAY$P0", Type: "INTEGER"}}},
	}
	got := op.Diagnose(db, "GATEWAY")
	want := "R (Set_X): output GATEWAY$P0 takes a name like those the gateway's block keeps for its own variables (GATEWAY$…): if it is one of them, the block a write runs in does not prepare and every call fails; rename the output"
	if len(got) != 1 || got[0].Fatal || got[0].Text != want {
		t.Fatalf("findings %+v, want the warning %q", got, want)
	}
}

// TestHoldsLess: the doctor compares a decimal's range with what the
// database stores its NUMERIC or DECIMAL in, not their digits.
func TestHoldsLess(t *testing.T) {
	tests := []struct {
		db      DBParam
		p, s    int
		smaller bool
	}{
		{DBParam{Type: "NUMERIC", Precision: 9, Scale: 2}, 9, 2, false},
		{DBParam{Type: "NUMERIC", Precision: 18, Scale: 4}, 9, 2, false},
		{DBParam{Type: "NUMERIC", Precision: 4, Scale: 2}, 9, 2, true},
		{DBParam{Type: "NUMERIC", Precision: 9, Scale: 4}, 9, 2, true},
		{DBParam{Type: "DECIMAL", Precision: 4, Scale: 2}, 9, 2, false}, // stored in 32 bits
		{DBParam{Type: "NUMERIC", Precision: 5, Scale: 2}, 7, 2, false}, // both in 32 bits
	}
	for _, tt := range tests {
		if got := holdsLess(tt.db, Param{Kind: Decimal, Precision: tt.p, Scale: tt.s}); got != tt.smaller {
			t.Errorf("%s(%d,%d) against NUMERIC(%d,%d): holds less %v, want %v", tt.db.Type, tt.db.Precision, tt.db.Scale, tt.p, tt.s, got, tt.smaller)
		}
	}
}

// TestDecimalsOfDialect1: a NUMERIC of more than 9 digits in a SQL dialect
// 1 database is a DOUBLE PRECISION with a scale, which keeps what it is
// given unrounded and is answered at its scale. A decimal or an integer of
// the catalog fails no call there: a warning says what a double does with
// more decimals or more than 15 digits.
func TestDecimalsOfDialect1(t *testing.T) {
	numeric := DBParam{Type: "DOUBLE PRECISION", Precision: 15, Scale: 2}
	tests := []struct {
		c       Param
		d       DBParam
		finding string
		fatal   bool
	}{
		{Param{Kind: Decimal, Precision: 15, Scale: 2}, numeric, "", false},
		{Param{Kind: Decimal, Precision: 9, Scale: 2}, numeric, "", false},
		{Param{Kind: Decimal, Precision: 15, Scale: 4}, numeric, "is NUMERIC(15,2) in the database, a double of SQL dialect 1, the catalog allows 4 decimals: the database keeps them and answers 2", false},
		{Param{Kind: Decimal, Precision: 18, Scale: 2}, numeric, "is NUMERIC(15,2) in the database, a double of SQL dialect 1, the catalog allows 18 digits: a double keeps 15, and rounds the rest", false},
		{Param{Kind: Integer, Bits: 32}, numeric, "", false},
		{Param{Kind: Integer, Bits: 64}, numeric, "is NUMERIC(15,2) in the database, a double of SQL dialect 1, the catalog allows 64-bit integers: a double keeps 15 digits, and rounds the rest", false},
		{Param{Kind: Decimal, Precision: 15, Scale: 2}, DBParam{Type: "DOUBLE PRECISION"}, "is DOUBLE PRECISION in the database, a decimal in the catalog", true},
		{Param{Kind: Integer, Bits: 32}, DBParam{Type: "DOUBLE PRECISION"}, "is DOUBLE PRECISION in the database, an integer in the catalog", true},
	}
	for _, tt := range tests {
		text, fatal := compareParam(tt.c, tt.d)
		if text != tt.finding || fatal != tt.fatal {
			t.Errorf("%s against %+v: %q fatal %v, want %q fatal %v", tt.d, tt.c, text, fatal, tt.finding, tt.fatal)
		}
	}
}
