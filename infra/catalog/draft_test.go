package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/erp-gateway/gateway/shared/catalog"
)

// TestDraftTellsWritesFromReads: a procedure is drafted as a write when it
// cannot be read from or when its name says it writes, however it returns
// its rows; a note says when the two disagree.
func TestDraftTellsWritesFromReads(t *testing.T) {
	out := []catalog.DBParam{{Name: "CODIGO", Type: "VARCHAR", Chars: 20}}
	tests := []struct {
		name       string
		selectable bool
		clave      string
		endpoint   catalog.Endpoint
		note       bool
	}{
		{"REST_SELECT_ART", true, "Get_Art", catalog.ExecuteQuery, false},
		{"REST_GET_SALDO", true, "Get_Saldo", catalog.ExecuteQuery, false},
		{"REST_INSERT_TERCEROS", false, "Set_Terceros", catalog.Execute, false},
		{"REST_INSERT_PEDIDO", true, "Set_Pedido", catalog.Execute, true},
		{"REST_UPDATE_PRECIO", true, "Set_Precio", catalog.Execute, true},
		{"REST_DELETE_LINEA", true, "Set_Linea", catalog.Execute, true},
		{"REST_SELECT_Y_MARCA", false, "Get_Y_Marca", catalog.ExecuteQuery, false},
		{"REST_GET_TOTALES", false, "Get_Totales", catalog.ExecuteQuery, false},
		{"REST_CIERRE", true, "Get_Cierre", catalog.ExecuteQuery, false},
		{"REST_CIERRE_DIA", false, "Set_Cierre_Dia", catalog.Execute, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, notes := draft(3, []catalog.Procedure{{Name: tt.name, Exists: true, Selectable: tt.selectable, Outputs: out}})
			op := doc.Operations[0]
			if op.Clave != tt.clave || op.Endpoint != tt.endpoint {
				t.Errorf("drafted %s on %s, want %s on %s", op.Clave, op.Endpoint, tt.clave, tt.endpoint)
			}
			noted := strings.Contains(strings.Join(notes, "\n"), "named for a write")
			if noted != tt.note {
				t.Errorf("note on a selectable write: %v, want %v: %q", noted, tt.note, notes)
			}
			// A read that is not selectable is read by EXECUTE PROCEDURE:
			// the operator is told.
			readNote := strings.Contains(strings.Join(notes, "\n"), "not selectable, but named for a read")
			if want := tt.endpoint == catalog.ExecuteQuery && !tt.selectable; readNote != want {
				t.Errorf("note on a read that is not selectable: %v, want %v: %q", readNote, want, notes)
			}
		})
	}
}

// TestDraftNamesFieldsTheGatewayServes: a field is the input's name
// without P_, unless that would be CLAVE, no identifier, or another
// input's field; then its whole name, with a note. A draft the gateway
// would refuse says so.
func TestDraftNamesFieldsTheGatewayServes(t *testing.T) {
	tests := []struct {
		name   string
		inputs []string
		want   []string
		notes  []string
	}{
		{"the prefix dropped", []string{"P_CODIGO", "NOMBRE"}, []string{"CODIGO", "NOMBRE"}, nil},
		{"P_CLAVE", []string{"P_CLAVE"}, []string{"P_CLAVE"}, []string{"input P_CLAVE: request field P_CLAVE, its whole name, as CLAVE would not be"}},
		{"P_1", []string{"P_1"}, []string{"P_1"}, []string{"input P_1: request field P_1, its whole name"}},
		{"P_CODIGO beside CODIGO", []string{"P_CODIGO", "CODIGO"}, []string{"P_CODIGO", "CODIGO"}, []string{"input P_CODIGO: request field P_CODIGO, its whole name"}},
		{"a quoted name", []string{"mi campo"}, []string{"mi campo"}, []string{"input mi campo: no request field may be named so"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in []catalog.DBParam
			for _, n := range tt.inputs {
				in = append(in, catalog.DBParam{Name: n, Type: "INTEGER"})
			}
			doc, notes := draft(3, []catalog.Procedure{{Name: "REST_SELECT_X", Exists: true, Selectable: true, Inputs: in,
				Outputs: []catalog.DBParam{{Name: "Y", Type: "INTEGER"}}}})
			var got []string
			for _, p := range doc.Operations[0].Params {
				got = append(got, p.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("fields %q, want %q", got, tt.want)
			}
			all := strings.Join(notes, "\n")
			for _, n := range tt.notes {
				if !strings.Contains(all, n) {
					t.Errorf("no note %q in:\n%s", n, all)
				}
			}
			if tt.notes == nil && strings.Contains(all, "input ") {
				t.Errorf("a note on fields drafted as they are:\n%s", all)
			}
		})
	}
}

// TestReadBackTakesTheWritesFields: a read-back's input binds to the
// write's input of its name, under that input's field, even when the
// field kept its whole name (P_CODIGO beside CODIGO).
func TestReadBackTakesTheWritesFields(t *testing.T) {
	in := func(names ...string) []catalog.DBParam {
		var out []catalog.DBParam
		for _, n := range names {
			out = append(out, catalog.DBParam{Name: n, Type: "INTEGER"})
		}
		return out
	}
	for _, tt := range []struct {
		name         string
		write, read  []string
		wantReadBack []string // nil: none found
	}{
		{"the prefix dropped", []string{"P_CODIGO"}, []string{"P_CODIGO"}, []string{"CODIGO"}},
		{"the read-back's without P_", []string{"P_CODIGO"}, []string{"CODIGO"}, []string{"CODIGO"}},
		{"two inputs, one field each", []string{"P_CODIGO", "CODIGO"}, []string{"P_CODIGO"}, []string{"P_CODIGO"}},
		{"an input the write lacks", []string{"P_CODIGO"}, []string{"P_OTRO"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc, _ := draft(3, []catalog.Procedure{
				{Name: "REST_INSERT_X", Exists: true, Inputs: in(tt.write...)},
				{Name: "REST_SELECT_X", Exists: true, Selectable: true, Inputs: in(tt.read...), Outputs: in("Y")},
			})
			for _, op := range doc.Operations {
				if op.Clave != "Set_X" {
					continue
				}
				var got []string
				if op.ReadBack != nil {
					got = op.ReadBack.Params
				}
				if !slices.Equal(got, tt.wantReadBack) || (tt.wantReadBack == nil) != (op.ReadBack == nil) {
					t.Fatalf("read-back %+v, want params %q", op.ReadBack, tt.wantReadBack)
				}
				return
			}
			t.Fatalf("no Set_X in %+v", doc.Operations)
		})
	}
}

// TestDraftNotesWhatAKindDoesNotSay: an input with a default, and one of
// character set OCTETS, each get a note (and the second a comment in the
// entry).
func TestDraftNotesWhatAKindDoesNotSay(t *testing.T) {
	in := []catalog.DBParam{{Name: "P_CODIGO", Type: "VARCHAR", Chars: 10}, {Name: "P_HASH", Type: "VARCHAR", Chars: 8, Charset: "OCTETS"}, {Name: "P_MONEDA", Type: "CHAR", Chars: 3, Default: true}}
	doc, notes := draft(3, []catalog.Procedure{{Name: "REST_SELECT_X", Exists: true, Selectable: true, Inputs: in, Outputs: []catalog.DBParam{{Name: "Y", Type: "INTEGER"}}}})
	all := strings.Join(notes, "\n")
	for _, want := range []string{
		"Get_X: input P_MONEDA has a default: calls get it only if the entry lists neither it nor any input after it",
		"Get_X: input P_HASH: VARCHAR(8) CHARACTER SET OCTETS in the database: a request's text is passed as its UTF-8 bytes",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no note %q in:\n%s", want, all)
		}
	}
	if strings.Contains(all, "P_CODIGO") {
		t.Errorf("a note on P_CODIGO:\n%s", all)
	}
	if c := doc.Operations[0].Params[1].Comment; !strings.Contains(c, "OCTETS") {
		t.Errorf("P_HASH's comment: %q", c)
	}
}

// TestDraftLeavesOutNamesACatalogCannotHold: a procedure whose name is no
// plain identifier (upper case, but a letter outside ASCII or a space:
// only a quoted identifier reaches it) is left out with a note, where it
// was drafted and refused by the catalog's check, one at a time.
func TestDraftLeavesOutNamesACatalogCannotHold(t *testing.T) {
	out := []catalog.DBParam{{Name: "N", Type: "INTEGER"}}
	doc, notes := draft(3, []catalog.Procedure{
		{Name: "REST_SELECT_AÑO", Exists: true, Selectable: true, Outputs: out},
		{Name: "REST_SELECT_CON ESPACIO", Exists: true, Selectable: true, Outputs: out},
		{Name: "REST_SELECT_MES", Exists: true, Selectable: true, Outputs: out},
	})
	if len(doc.Operations) != 1 || doc.Operations[0].Procedure != "REST_SELECT_MES" {
		t.Fatalf("drafted %+v, want REST_SELECT_MES alone", doc.Operations)
	}
	for _, name := range []string{`"REST_SELECT_AÑO": left out`, `"REST_SELECT_CON ESPACIO": left out`} {
		if !strings.Contains(strings.Join(notes, "\n"), name) {
			t.Errorf("no note %q: %q", name, notes)
		}
	}
	var buf bytes.Buffer
	if err := doc.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := catalog.Decode(buf.Bytes()); err != nil {
		t.Fatalf("the draft does not check: %v", err)
	}
}

// TestDraftDialect1Inputs: in a SQL dialect 1 database a NUMERIC of more
// than 9 digits is a DOUBLE PRECISION with a scale, drafted as the decimal
// it is, and every date a TIMESTAMP, drafted as a date (the clients' dates
// are days, NA none) with a note; a double without a scale stays text, and
// so does a TIMESTAMP of dialect 3, which may carry a time of day.
func TestDraftDialect1Inputs(t *testing.T) {
	in := []catalog.DBParam{{Name: "P_VALOR", Type: "DOUBLE PRECISION", Precision: 15, Scale: 2}, {Name: "P_FECHA", Type: "TIMESTAMP"}, {Name: "P_TASA", Type: "DOUBLE PRECISION"}}
	doc, notes := draft(1, []catalog.Procedure{{Name: "REST_INSERT_PAGO", Exists: true, Inputs: in}})
	ps := doc.Operations[0].Params
	if p := ps[0]; p.Kind != catalog.Decimal || p.Precision == nil || *p.Precision != 15 || p.Scale == nil || *p.Scale != 2 {
		t.Errorf("P_VALOR drafted %+v, want a decimal(15,2)", p)
	}
	if p := ps[1]; p.Kind != catalog.Date || !strings.Contains(p.Comment, "drafted as a date, passed at midnight") {
		t.Errorf("P_FECHA drafted %+v, want a date with a comment", p)
	}
	if p := ps[2]; p.Kind != "" || p.MaxChars != 32765 {
		t.Errorf("P_TASA drafted %+v, want text", p)
	}
	if all := strings.Join(notes, "\n"); !strings.Contains(all, "input P_FECHA: TIMESTAMP in the database (SQL dialect 1's DATE): drafted as a date") || strings.Contains(all, "P_VALOR") {
		t.Errorf("notes:\n%s", all)
	}
	doc, _ = draft(3, []catalog.Procedure{{Name: "REST_INSERT_PAGO", Exists: true, Inputs: in}})
	if p := doc.Operations[0].Params[1]; p.Kind != "" || p.MaxChars != 32765 {
		t.Errorf("a TIMESTAMP of dialect 3 drafted %+v, want text", p)
	}
}
