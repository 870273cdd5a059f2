package gateway_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/erp-gateway/gateway/shared/access"
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/gateway"
)

// TestDocumentAsOneStatement: a batch of writes runs as one EXECUTE BLOCK,
// references passed inside the database (the firebird package's documentBlock), and
// answers as its calls sent one by one do, byte for byte: values of every
// kind, a refused call named with the database's own text, a reference
// that finds no row; and where the block cannot (a reference the block
// does not pass, an argument the database cannot take before the block
// runs) the calls run one by one with the same answers. Nothing of a
// refused document is written.
func TestDocumentAsOneStatement(t *testing.T) {
	cfg := fbtest.Demo(t)
	admin := setupKeys(t, cfg)
	e := newEnv(t, gateway.Config{}, map[string]any{"demo": anonymous(cfg)})
	// An operation whose CODIGO may be longer than its procedure takes (the
	// doctor would say so): the database refuses it before the block runs;
	// and one whose procedure the gateway may not run: the block does not
	// prepare.
	// (never granted to the gateway's user).
	fbtest.Setup(t, cfg, `CREATE OR ALTER PROCEDURE REST_TEST_SIN_PERMISO (P_CODIGO VARCHAR(20), P_VALOR INTEGER) AS BEGIN END`,
		// And a payment whose value has a default the catalog leaves out.
		`CREATE OR ALTER PROCEDURE REST_TEST_PAGAR_DEF (P_CODIGO VARCHAR(20), P_VALOR INTEGER = 7) AS BEGIN
			INSERT INTO TEST_PAGOS (CODIGO, VALOR) VALUES (:P_CODIGO, :P_VALOR);
		END`,
		`GRANT ALL ON TEST_PAGOS TO PROCEDURE REST_TEST_PAGAR_DEF`,
		`GRANT EXECUTE ON PROCEDURE REST_TEST_PAGAR_DEF TO GATEWAY`)
	cat, err := catalog.New(append(testOperations(), catalog.Operation{Clave: "Set_Pago_Largo", Endpoint: catalog.Execute, Procedure: "REST_TEST_PAGAR",
		Params:   []catalog.Param{{Name: "CODIGO", MaxLen: 40, Required: true}, {Name: "VALOR", Kind: catalog.Integer, Bits: 32}},
		ReadBack: &catalog.ReadBack{Procedure: "REST_TEST_PAGOS", Params: []string{"CODIGO"}}},
		catalog.Operation{Clave: "Set_Sin_Permiso", Endpoint: catalog.Execute, Procedure: "REST_TEST_SIN_PERMISO",
			Params: []catalog.Param{{Name: "CODIGO", MaxLen: 20, Required: true}, {Name: "VALOR", Kind: catalog.Integer, Bits: 32}}},
		catalog.Operation{Clave: "Set_Pago_Def", Endpoint: catalog.Execute, Procedure: "REST_TEST_PAGAR_DEF",
			Params:   []catalog.Param{{Name: "CODIGO", MaxLen: 20, Required: true}},
			ReadBack: &catalog.ReadBack{Procedure: "REST_TEST_PAGOS", Params: []string{"CODIGO"}}}))
	if err != nil {
		t.Fatal(err)
	}
	e.h = gateway.New(gateway.Config{}, cat, access.Static(e.acc.Document), e.src, e.db, slog.New(slog.NewTextHandler(&lockedWriter{w: e.log}, nil)))
	long := strings.Repeat("L", 30)
	pago := func(clave, code, valor string) string {
		return fmt.Sprintf(`{"CLAVE":%q,"CODIGO":%s,"VALOR":%s}`, clave, code, valor)
	}
	ref := func(field string) string { return fmt.Sprintf(`{"$from":0,"$field":%q}`, field) }
	tests := []struct {
		name string
		// doc is the document, with %[1]q its code; singles are its calls
		// sent alone, in order, with %[1]q another code, their answers the
		// document's (1501, 1502 and 1503 in want instead; "": only its
		// success).
		doc     []string
		singles []string
		want    []erp.Code // per call: 0 for the single's answer
		written int        // payments of the document's code
		// block: 1 when the document runs as one statement (at most 2
		// round trips once its connection prepared it: the block, then the
		// commit or the rollback), -1 when its calls run one by one.
		block int
	}{
		{"values of every kind, references to a text and an integer",
			[]string{pago("Set_Valores", "%[1]q", "1"), pago("Set_Pago", ref("CODIGO"), ref("VECES")), pago("Set_Valores_Largos", "%[1]q", "3")},
			[]string{pago("Set_Valores", "%[1]q", "1"), pago("Set_Pago", "%[1]q", "1"), pago("Set_Valores_Largos", "%[1]q", "3")},
			[]erp.Code{0, 0, 0}, 3, 1},
		// A BLOB is read after its row, in round trips of its own.
		{"an input left to its default",
			[]string{`{"CLAVE":"Set_Pago_Def","CODIGO":%[1]q}`, pago("Set_Pago", ref("CODIGO"), "2")},
			[]string{`{"CLAVE":"Set_Pago_Def","CODIGO":%[1]q}`, pago("Set_Pago", "%[1]q", "2")},
			[]erp.Code{0, 0}, 2, 1},
		{"a BLOB, a double and more decimals",
			[]string{pago("Set_Valores_Flotantes", "%[1]q", "1"), pago("Set_Pago", ref("CODIGO"), "2")},
			[]string{pago("Set_Valores_Flotantes", "%[1]q", "1"), pago("Set_Pago", "%[1]q", "2")},
			[]erp.Code{0, 0}, 2, 0},
		{"a refused call",
			[]string{pago("Set_Pago", "%[1]q", "1"), pago("Set_Pago", ref("CODIGO"), "-1"), pago("Set_Pago", "%[1]q", "2")},
			[]string{"", pago("Set_Pago", "%[1]q", "-1"), ""},
			[]erp.Code{erp.CodeRolledBack, 0, erp.CodeNotRun}, 0, 1},
		{"the first call refused",
			[]string{pago("Set_Pago", "%[1]q", "-1"), pago("Set_Pago", "%[1]q", "1")},
			[]string{pago("Set_Pago", "%[1]q", "-1"), ""},
			[]erp.Code{0, erp.CodeNotRun}, 0, 1},
		{"a reference that finds no row",
			[]string{pago("Set_Pago_Sin_Filas", "%[1]q", "1"), pago("Set_Pago", "%[1]q", "1"), pago("Set_Pago", ref("CODIGO"), "2")},
			nil,
			[]erp.Code{erp.CodeRolledBack, erp.CodeRolledBack, erp.CodeReferenceMissing}, 0, 1},
		{"a reference to a column the answer does not have",
			[]string{pago("Set_Pago", "%[1]q", "1"), pago("Set_Pago", ref("NADA"), "2")},
			nil,
			[]erp.Code{erp.CodeRolledBack, erp.CodeReferenceMissing}, 0, 0},
		{"a reference the block does not pass (a CHAR)",
			[]string{pago("Set_Valores", "%[1]q", "1"), pago("Set_Pago", ref("C"), "2")},
			[]string{pago("Set_Valores", "%[1]q", "1"), ""},
			[]erp.Code{0, 0}, 1, -1},
		{"an argument the procedure cannot take",
			[]string{pago("Set_Pago", "%[1]q", "1"), pago("Set_Pago_Largo", `"`+long+`"`, "2")},
			[]string{"", pago("Set_Pago_Largo", `"`+long+`"`, "2")},
			[]erp.Code{erp.CodeRolledBack, 0}, 0, -1},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, other := fmt.Sprintf("DOC%d-%s", i, newCode()[:8]), fmt.Sprintf("ONE%d-%s", i, newCode()[:8])
			// Once, for the connection to prepare it.
			send(t, e.h, "execute", "["+fmt.Sprintf(strings.Join(tt.doc, ","), "W"+code)+"]")
			r := send(t, e.h, "execute", "["+fmt.Sprintf(strings.Join(tt.doc, ","), code)+"]")
			if r.status != 200 || len(r.answers) != len(tt.doc) {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if trips := loggedTrips(t, e); tt.block > 0 && trips > 2 || tt.block < 0 && trips <= 2 {
				t.Errorf("%d round trips (one statement: %v)", trips, tt.block > 0)
			}
			for j, want := range tt.want {
				got, _ := json.Marshal(r.answers[j])
				if want != 0 {
					if r.answers[j]["cod_error"] != float64(want) {
						t.Errorf("call %d: %s, want cod_error %d", j, got, want)
					}
					continue
				}
				if tt.singles[j] == "" {
					if r.answers[j]["cod_error"] != float64(0) || r.answers[j]["data"] == nil {
						t.Errorf("call %d: %s", j, got)
					}
					continue
				}
				body := tt.singles[j]
				if strings.Contains(body, "%[1]q") {
					body = fmt.Sprintf(body, other)
				}
				single := send(t, e.h, "execute", body)
				// The single's answer as the document's element: the same
				// JSON, its code the document's.
				var a any
				if err := json.Unmarshal([]byte(strings.ReplaceAll(single.body, other, code)), &a); err != nil {
					t.Fatalf("%v: %s", err, single.body)
				}
				if wantJSON, _ := json.Marshal(a); string(got) != string(wantJSON) {
					t.Errorf("call %d:\n%s\nalone:\n%s", j, got, wantJSON)
				}
			}
			if n := count(t, admin, "SELECT COUNT(*) FROM TEST_PAGOS WHERE CODIGO = ?", code); n != tt.written {
				t.Errorf("%d payments written, want %d: %s", n, tt.written, r.body)
			}
		})
	}

	// A block that does not prepare: its calls run one by one, and the one
	// the database cannot run is named, each time.
	code := "NOPREP-" + newCode()[:8]
	for range 2 {
		r := send(t, e.h, "execute", "["+pago("Set_Pago", fmt.Sprintf("%q", code), "1")+","+pago("Set_Sin_Permiso", fmt.Sprintf("%q", code), "1")+"]")
		if r.status != 503 || !strings.Contains(r.body, "call 1, CLAVE Set_Sin_Permiso") {
			t.Errorf("a block that does not prepare: %d %s", r.status, r.body)
		}
	}
	if n := count(t, admin, "SELECT COUNT(*) FROM TEST_PAGOS WHERE CODIGO = ?", code); n != 0 {
		t.Errorf("%d payments written by a batch that could not run", n)
	}
}
