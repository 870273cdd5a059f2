package main

import (
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
		{"REST_SELECT_Y_MARCA", false, "Set_Y_Marca", catalog.Execute, false},
		{"REST_CIERRE", true, "Get_Cierre", catalog.ExecuteQuery, false},
		{"REST_CIERRE_DIA", false, "Set_Cierre_Dia", catalog.Execute, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, notes := draft([]catalog.Procedure{{Name: tt.name, Exists: true, Selectable: tt.selectable, Outputs: out}})
			op := doc.Operations[0]
			if op.Clave != tt.clave || op.Endpoint != tt.endpoint {
				t.Errorf("drafted %s on %s, want %s on %s", op.Clave, op.Endpoint, tt.clave, tt.endpoint)
			}
			noted := strings.Contains(strings.Join(notes, "\n"), "named for a write")
			if noted != tt.note {
				t.Errorf("note on a selectable write: %v, want %v: %q", noted, tt.note, notes)
			}
		})
	}
}
