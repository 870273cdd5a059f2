package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// sent is a request's answer with the headers a batch's test reads.
type sent struct {
	status  int
	body    string
	header  http.Header
	answers []map[string]any
}

// send posts body to endpoint of the demo instance with headers.
func send(t testing.TB, h http.Handler, endpoint, body string, headers ...string) sent {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path("demo", endpoint), strings.NewReader(body))
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	s := sent{status: rec.Code, body: rec.Body.String(), header: rec.Header()}
	if strings.HasPrefix(s.body, "[") {
		if err := json.Unmarshal(rec.Body.Bytes(), &s.answers); err != nil {
			t.Fatalf("%v: %s", err, s.body)
		}
	}
	return s
}

// order is a batch: a header for tercero and a line for each reference, each
// taking the header's number by reference.
func order(tercero string, refs ...string) string {
	calls := []string{fmt.Sprintf(`{"CLAVE":"Set_Pedido","TERCERO":%q,"FECHA":"24.11.2026","NOTA":"web"}`, tercero)}
	for _, r := range refs {
		calls = append(calls, fmt.Sprintf(`{"CLAVE":"Set_Pedido_Linea","NUMERO":{"$from":0,"$field":"NUMERO"},"REFERENCIA":%q,"CANTIDAD":"2.5"}`, r))
	}
	return "[" + strings.Join(calls, ",") + "]"
}

func TestBatchWritesADocumentWhole(t *testing.T) {
	cfg := fbtest.Demo(t)
	admin := fbtest.Open(t, fbtest.Admin(t, cfg))
	e := newEnv(t, gateway.Config{}, map[string]any{"demo": anonymous(cfg)})
	orders := func() int { return count(t, admin, "SELECT COUNT(*) FROM PEDIDOS") }
	lines := func() int { return count(t, admin, "SELECT COUNT(*) FROM PEDIDOS_LINEAS") }

	t.Run("header and lines", func(t *testing.T) {
		r := send(t, e.h, "execute", order("800000000", "REF0001", "REF0002", "REF0003"), "X-Request-Id", "ignored")
		if r.status != 200 || len(r.answers) != 4 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		number := r.answers[0]["data"].([]any)[0].(map[string]any)["NUMERO"]
		for i, a := range r.answers[1:] {
			want := fmt.Sprintf(`{"cod_error":0,"data":[{"NUMERO":%v,"LINEA":%d}]}`, number, i+1)
			if got, _ := json.Marshal(a); string(got) != want && !strings.Contains(r.body, want) {
				t.Errorf("line %d: %s, want %s", i+1, got, want)
			}
		}
		if n := count(t, admin, "SELECT COUNT(*) FROM PEDIDOS_LINEAS WHERE NUMERO = ?", number); n != 3 {
			t.Errorf("%d lines written, want 3", n)
		}
		// The ERP's trigger saw who wrote it.
		if n := count(t, admin, "SELECT COUNT(*) FROM AUDITORIA WHERE TABLA = 'PEDIDOS' AND CLAVE = ? AND REQUEST_ID = ?", fmt.Sprint(number), r.header.Get("X-Request-Id")); n != 1 {
			t.Errorf("the audit trigger did not see the request id %s", r.header.Get("X-Request-Id"))
		}
	})

	t.Run("a refused line writes nothing", func(t *testing.T) {
		before, beforeLines := orders(), lines()
		r := send(t, e.h, "execute", order("800000000", "REF0001", "NOPE", "REF0002"))
		if r.status != 200 || len(r.answers) != 4 || strings.Contains(r.body, `"data"`) {
			t.Fatalf("%d %s", r.status, r.body)
		}
		for i, code := range []erp.Code{erp.CodeRolledBack, erp.CodeRolledBack, 0, erp.CodeNotRun} {
			if got := r.answers[i]["cod_error"]; got != float64(code) {
				t.Errorf("call %d: cod_error %v, want %d: %s", i, got, code, r.body)
			}
		}
		if ex, _ := r.answers[2]["ex_execsql"].(string); !strings.Contains(ex, "LA REFERENCIA NOPE NO EXISTE") {
			t.Errorf("the refused call's text: %q", ex)
		}
		if orders() != before || lines() != beforeLines {
			t.Errorf("written: orders %d → %d, lines %d → %d", before, orders(), beforeLines, lines())
		}
	})

	t.Run("a dry run answers and writes nothing", func(t *testing.T) {
		before, beforeLines := orders(), lines()
		r := send(t, e.h, "execute", order("800000000", "REF0001", "REF0002"), "Prefer", "return=minimal, tx=rollback")
		if r.status != 200 || len(r.answers) != 3 || r.header.Get("Preference-Applied") != "tx=rollback" {
			t.Fatalf("%d %v %s", r.status, r.header, r.body)
		}
		for i, a := range r.answers {
			if a["cod_error"] != float64(0) || a["data"] == nil {
				t.Errorf("call %d: %v", i, a)
			}
		}
		if orders() != before || lines() != beforeLines {
			t.Errorf("a dry run wrote: orders %d → %d, lines %d → %d", before, orders(), beforeLines, lines())
		}
	})

	t.Run("refused before anything runs", func(t *testing.T) {
		before := orders()
		tests := []struct {
			name, body string
			code       erp.Code
			index      int
		}{
			{"empty", `[]`, erp.CodeBatchEmpty, -1},
			{"a forward reference", `[{"CLAVE":"Set_Pedido_Linea","NUMERO":{"$from":1,"$field":"NUMERO"},"REFERENCIA":"REF0001","CANTIDAD":1},{"CLAVE":"Set_Pedido","TERCERO":"800000000"}]`, erp.CodeReference, 0},
			{"an unknown index", `[{"CLAVE":"Set_Pedido","TERCERO":"800000000"},{"CLAVE":"Set_Pedido_Linea","NUMERO":{"$from":7,"$field":"NUMERO"},"REFERENCIA":"REF0001","CANTIDAD":1}]`, erp.CodeReference, 1},
			{"a bad value in the second call", `[{"CLAVE":"Set_Pedido","TERCERO":"800000000"},{"CLAVE":"Set_Pedido_Linea","NUMERO":"x","REFERENCIA":"REF0001","CANTIDAD":1}]`, erp.CodeParamFormat, 1},
			{"not an object", `[{"CLAVE":"Set_Pedido","TERCERO":"800000000"}, 3]`, erp.CodeNotObject, 1},
			{"over the limit", "[" + strings.Repeat(`{"CLAVE":"Set_Pedido","TERCERO":"800000000"},`, gateway.DefaultBatchMax) + `{"CLAVE":"Set_Pedido","TERCERO":"800000000"}]`, erp.CodeBatchTooLarge, -1},
			{"a reference outside a batch", `{"CLAVE":"Set_Pedido_Linea","NUMERO":{"$from":0,"$field":"NUMERO"},"REFERENCIA":"REF0001","CANTIDAD":1}`, erp.CodeReference, -1},
			{"a reference giving $from twice", `[{"CLAVE":"Set_Pedido","TERCERO":"800000000"},{"CLAVE":"Set_Pedido_Linea","NUMERO":{"$from":5,"$from":0,"$field":"NUMERO"},"REFERENCIA":"REF0001","CANTIDAD":1}]`, erp.CodeReference, 1},
			{"a call giving a field twice", `[{"CLAVE":"Set_Pedido","TERCERO":"800000000","TERCERO":"900000000"}]`, erp.CodeNotObject, 0},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := send(t, e.h, "execute", tt.body)
				var body struct {
					Code  erp.Code `json:"cod_error"`
					Text  string   `json:"ex_execsql"`
					Index *int     `json:"index"`
				}
				if err := json.Unmarshal([]byte(r.body), &body); err != nil || r.status != tt.code.Status() || body.Code != tt.code {
					t.Fatalf("%d %s", r.status, r.body)
				}
				if tt.index >= 0 && (body.Index == nil || *body.Index != tt.index || !strings.Contains(body.Text, fmt.Sprintf("call %d ", tt.index))) {
					t.Errorf("the refusal names no call %d: %s", tt.index, r.body)
				}
				if tt.index < 0 && body.Index != nil {
					t.Errorf("an index for the whole batch: %s", r.body)
				}
			})
		}
		if orders() != before {
			t.Errorf("a refused batch wrote %d orders", orders()-before)
		}
	})
}

// TestBatchReadsSeeOneMoment: a batch of reads answers each read byte for
// byte as the single read does.
func TestBatchReadsSeeOneMoment(t *testing.T) {
	e := demoEnv(t, gateway.Config{})
	// 100 reads, one of them refused by the database.
	var reads []string
	for i := range 100 {
		reads = append(reads, fmt.Sprintf(`{"CLAVE":"Get_Referencias","CODIGO":"REF%04d"}`, i%30+1))
	}
	reads[1] = `{"CLAVE":"Get_Terceros","CODIGO":"NOEXISTE"}`
	var singles []string
	for _, r := range reads {
		singles = append(singles, send(t, e.h, "executequery", r).body)
	}
	r := send(t, e.h, "executequery", "["+strings.Join(reads, ",")+"]")
	if r.status != 200 || r.body != "["+strings.Join(singles, ",")+"]" {
		t.Fatalf("%d\n%s\nthe single answers:\n%s", r.status, r.body, strings.Join(singles, ","))
	}
	// A reference that finds nothing fails the batch, which wrote nothing
	// and says nothing of writes.
	ref := send(t, e.h, "executequery", `[{"CLAVE":"Get_Referencias","CODIGO":"REF0001"},{"CLAVE":"Get_Terceros","CODIGO":{"$from":0,"$field":"NO_SUCH"}}]`)
	if ref.status != 200 || !strings.HasPrefix(ref.body, `[{"cod_error":1501,"ex_execsql":"call 1 of the batch was refused: this call ran and its answer was dropped"},{"cod_error":1503,`) || strings.Contains(ref.body, "written") {
		t.Fatalf("%d %s", ref.status, ref.body)
	}
	// A write in a read batch is refused, naming it.
	w := send(t, e.h, "executequery", `[{"CLAVE":"Get_Referencias","CODIGO":"REF0001"},{"CLAVE":"Set_Pedido","TERCERO":"800000000"}]`)
	if w.status != 400 || !strings.Contains(w.body, `"index":1`) {
		t.Fatalf("%d %s", w.status, w.body)
	}
}

func TestBatchOfAReadOnlyToken(t *testing.T) {
	cfg := fbtest.Demo(t)
	admin := fbtest.Open(t, fbtest.Admin(t, cfg))
	e := newEnv(t, gateway.Config{}, map[string]any{"demo": tenants.Instance{Connection: cfg}})
	token, _, err := e.acc.Mint("demo", erp.Limits{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	before := count(t, admin, "SELECT COUNT(*) FROM PEDIDOS")
	r := send(t, e.h, "execute", `[{"CLAVE":"Get_Referencias","CODIGO":"REF0001"},{"CLAVE":"Set_Pedido","TERCERO":"800000000"}]`, "Authorization", "Bearer "+token)
	if r.status != 403 || !strings.Contains(r.body, `"index":1`) || !strings.Contains(r.body, "call 1 of the batch") {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if count(t, admin, "SELECT COUNT(*) FROM PEDIDOS") != before {
		t.Error("written")
	}
}

func TestBatchUnderAnIdempotencyKey(t *testing.T) {
	e, _, admin := keysEnv(t, true)
	token, id, err := e.acc.Mint("demo", erp.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	key := fmt.Sprintf("pedido-%d", time.Now().UnixNano())
	before := count(t, admin, "SELECT COUNT(*) FROM PEDIDOS")
	first := send(t, e.h, "execute", order("800000000", "REF0001"), "Authorization", "Bearer "+token, "Idempotency-Key", key)
	again := send(t, e.h, "execute", order("800000000", "REF0001"), "Authorization", "Bearer "+token, "Idempotency-Key", key)
	if first.status != 200 || again.body != first.body || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("first %d %s\nagain %d %s %v", first.status, first.body, again.status, again.body, again.header)
	}
	if n := count(t, admin, "SELECT COUNT(*) FROM PEDIDOS") - before; n != 1 {
		t.Errorf("%d orders written, want 1", n)
	}
	// The ERP's trigger saw whose token wrote it, and which request.
	if n := count(t, admin, "SELECT COUNT(*) FROM AUDITORIA WHERE TOKEN_ID = ? AND REQUEST_ID = ?", id, first.header.Get("X-Request-Id")); n != 1 {
		t.Errorf("the audit trigger saw token %s and request %s %d times, want once", id, first.header.Get("X-Request-Id"), n)
	}
	assertNoOpenWrites(t, admin)
	other := send(t, e.h, "execute", order("800000000", "REF0002"), "Authorization", "Bearer "+token, "Idempotency-Key", key)
	if other.status != erp.CodeKeyReused.Status() {
		t.Errorf("another batch under the key: %d %s", other.status, other.body)
	}
	dry := send(t, e.h, "execute", order("800000000", "REF0001"), "Authorization", "Bearer "+token, "Idempotency-Key", key+"-dry", "Prefer", "tx=rollback")
	if dry.status != 400 || !strings.Contains(dry.body, fmt.Sprint(erp.CodeKeyDryRun)) {
		t.Errorf("a dry run with a key: %d %s", dry.status, dry.body)
	}
}

// TestWriteAnsweredByItsProcedure: a write without a read-back is answered
// by its procedure's outputs, as one row, with a key or without.
func TestWriteAnsweredByItsProcedure(t *testing.T) {
	e, token, admin := keysEnv(t, true)
	header := `{"CLAVE":"Set_Pedido","TERCERO":"800000000","NOTA":"una"}`
	number := func(r sent) int {
		var a struct{ Data []struct{ NUMERO int } }
		if err := json.Unmarshal([]byte(r.body), &a); err != nil || r.status != 200 || len(a.Data) != 1 || a.Data[0].NUMERO == 0 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		return a.Data[0].NUMERO
	}
	plain := number(send(t, e.h, "execute", header, "Authorization", "Bearer "+token))
	key := fmt.Sprintf("cabecera-%d", time.Now().UnixNano())
	first := send(t, e.h, "execute", header, "Authorization", "Bearer "+token, "Idempotency-Key", key)
	again := send(t, e.h, "execute", header, "Authorization", "Bearer "+token, "Idempotency-Key", key)
	if keyed := number(first); keyed <= plain || again.body != first.body || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("unkeyed %d; keyed %s, replayed %s %v", plain, first.body, again.body, again.header)
	}
	if n := count(t, admin, "SELECT COUNT(*) FROM PEDIDOS WHERE NUMERO >= ?", plain); n != 2 {
		t.Errorf("%d orders from %d on, want 2", n, plain)
	}
	refused := send(t, e.h, "execute", `{"CLAVE":"Set_Pedido","TERCERO":"NADIE"}`, "Authorization", "Bearer "+token)
	if refused.status != 200 || !strings.Contains(refused.body, `"cod_error":0,"ex_execsql":"[firebirdsql]exception 16\r\nREST_ERROR\r\n***EL TERCERO NADIE NO EXISTE***`) {
		t.Errorf("%d %s", refused.status, refused.body)
	}
}

// TestDryRunOfOneCall: Prefer: tx=rollback on a single write answers as
// the write would and writes nothing; with a key it is refused.
func TestDryRunOfOneCall(t *testing.T) {
	e, token, admin := keysEnv(t, true)
	before := count(t, admin, "SELECT COUNT(*) FROM PEDIDOS")
	header := `{"CLAVE":"Set_Pedido","TERCERO":"800000000"}`
	r := send(t, e.h, "execute", header, "Authorization", "Bearer "+token, "Prefer", `respond-async, tx="rollback"; x=1`)
	if r.status != 200 || !strings.HasPrefix(r.body, `{"cod_error":0,"data":[{"NUMERO":`) || r.header.Get("Preference-Applied") != "tx=rollback" {
		t.Fatalf("%d %v %s", r.status, r.header, r.body)
	}
	refused := send(t, e.h, "execute", `{"CLAVE":"Set_Pedido","TERCERO":"NADIE"}`, "Authorization", "Bearer "+token, "Prefer", "tx=rollback")
	if refused.status != 200 || !strings.Contains(refused.body, "EL TERCERO NADIE NO EXISTE") {
		t.Fatalf("%d %s", refused.status, refused.body)
	}
	keyed := send(t, e.h, "execute", header, "Authorization", "Bearer "+token, "Prefer", "tx=rollback", "Idempotency-Key", "dry")
	if keyed.status != 400 || !strings.Contains(keyed.body, fmt.Sprint(erp.CodeKeyDryRun)) {
		t.Fatalf("%d %s", keyed.status, keyed.body)
	}
	if n := count(t, admin, "SELECT COUNT(*) FROM PEDIDOS"); n != before {
		t.Errorf("a dry run wrote %d orders", n-before)
	}
	assertNoOpenWrites(t, admin)
}

// TestReferencesAreCheckedAsRequestValues: a $from passes the value as the
// answer showed it, checked as its parameter checks a request's: a date
// into a text parameter as the answer wrote it (the driver passed it as
// Firebird's 24-NOV-2026), and a NULL for a required parameter refused
// 1006 whether the batch runs as one block or step by step (it was passed
// as NULL), as is a value past a catalog narrower than the database (the
// block passed it); nothing is written.
func TestReferencesAreCheckedAsRequestValues(t *testing.T) {
	cfg := fbtest.Demo(t)
	fbtest.Setup(t, cfg,
		`CREATE OR ALTER PROCEDURE REST_TEST_NULO RETURNS (N INTEGER) AS BEGIN N = NULL; END`,
		`GRANT EXECUTE ON PROCEDURE REST_TEST_NULO TO GATEWAY`,
		`CREATE OR ALTER PROCEDURE REST_TEST_GRANDE RETURNS (N INTEGER) AS BEGIN N = 40000; END`,
		`GRANT EXECUTE ON PROCEDURE REST_TEST_GRANDE TO GATEWAY`)
	admin := fbtest.Open(t, fbtest.Admin(t, cfg))
	e := newEnv(t, gateway.Config{}, map[string]any{"demo": anonymous(cfg)})
	ops := testOperations()
	narrow := named(t, ops, "Set_Pedido_Linea")
	narrow.Clave, narrow.Params = "Set_Pedido_Linea_16", append([]catalog.Param{{Name: "NUMERO", Kind: catalog.Integer, Bits: 16, Required: true}}, narrow.Params[1:]...)
	h := specAnd(t, e, named(t, ops, "Set_Pedido"), named(t, ops, "Set_Pedido_Linea"), named(t, ops, "Get_Pedido"), narrow,
		catalog.Operation{Clave: "Set_Nulo", Endpoint: catalog.Execute, Procedure: "REST_TEST_NULO"},
		catalog.Operation{Clave: "Set_Grande", Endpoint: catalog.Execute, Procedure: "REST_TEST_GRANDE"})
	written := func() int {
		return count(t, admin, "SELECT (SELECT COUNT(*) FROM PEDIDOS) + (SELECT COUNT(*) FROM PEDIDOS_LINEAS) FROM RDB$DATABASE")
	}
	for _, c := range []struct {
		name, body string
		at         int
		code       erp.Code
		text       string
	}{
		{"a date into a text parameter",
			`[{"CLAVE":"Set_Pedido","TERCERO":"800000000","FECHA":"24.11.2026"},{"CLAVE":"Get_Pedido","NUMERO":{"$from":0,"$field":"NUMERO"}},` +
				`{"CLAVE":"Set_Pedido_Linea","NUMERO":{"$from":0,"$field":"NUMERO"},"REFERENCIA":{"$from":1,"$field":"FECHA"},"CANTIDAD":"1"}]`,
			2, 0, "LA REFERENCIA 2026-11-24 NO EXISTE"},
		{"a NULL for a required parameter, step by step",
			`[{"CLAVE":"Set_Pedido","TERCERO":"800000000"},{"CLAVE":"Get_Pedido","NUMERO":{"$from":0,"$field":"NUMERO"}},` +
				`{"CLAVE":"Set_Pedido_Linea","NUMERO":{"$from":1,"$field":"LINEA"},"REFERENCIA":"REF0001","CANTIDAD":"1"}]`,
			2, erp.CodeParamMissing, "call 2 of the batch: NUMERO is required for CLAVE Set_Pedido_Linea, and the value it takes is null (it takes LINEA of the first row of call 1's answer)"},
		{"a NULL for a required parameter, in one block",
			`[{"CLAVE":"Set_Nulo"},{"CLAVE":"Set_Pedido_Linea","NUMERO":{"$from":0,"$field":"N"},"REFERENCIA":"REF0001","CANTIDAD":"1"}]`,
			1, erp.CodeParamMissing, "call 1 of the batch: NUMERO is required for CLAVE Set_Pedido_Linea, and the value it takes is null (it takes N of the first row of call 0's answer)"},
		{"a NULL for a required parameter, after a write that steps a generator",
			`[{"CLAVE":"Set_Pedido","TERCERO":"800000000"},{"CLAVE":"Set_Nulo"},{"CLAVE":"Set_Pedido_Linea","NUMERO":{"$from":1,"$field":"N"},"REFERENCIA":"REF0001","CANTIDAD":"1"}]`,
			2, erp.CodeParamMissing, "call 2 of the batch: NUMERO is required for CLAVE Set_Pedido_Linea, and the value it takes is null (it takes N of the first row of call 1's answer)"},
		{"past a catalog narrower than the database",
			`[{"CLAVE":"Set_Grande"},{"CLAVE":"Set_Pedido_Linea_16","NUMERO":{"$from":0,"$field":"N"},"REFERENCIA":"REF0001","CANTIDAD":"1"}]`,
			1, erp.CodeParamFormat, "call 1 of the batch: NUMERO must be a whole number of 16 bits"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, numbered := written(), count(t, admin, "SELECT GEN_ID(GEN_PEDIDOS, 0) FROM RDB$DATABASE")
			r := send(t, h, "execute", c.body)
			if r.status != 200 || len(r.answers) <= c.at {
				t.Fatalf("%d %s", r.status, r.body)
			}
			got := r.answers[c.at]
			if ex, _ := got["ex_execsql"].(string); got["cod_error"] != float64(c.code) || !strings.Contains(ex, c.text) {
				t.Fatalf("call %d answered %v, want cod_error %d with %q", c.at, got, c.code, c.text)
			}
			if n := written(); n != before {
				t.Fatalf("%d rows written", n-before)
			}
			// The calls before the refused one ran once: what their
			// rollback does not undo (a generator's step) happened once.
			if steps := count(t, admin, "SELECT GEN_ID(GEN_PEDIDOS, 0) FROM RDB$DATABASE") - numbered; steps != strings.Count(c.body, `"CLAVE":"Set_Pedido"`) {
				t.Fatalf("the order numbers stepped %d times", steps)
			}
		})
	}
}
