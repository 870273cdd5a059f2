package gateway_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// TestAReadWithoutSuspend: a read whose procedure has no SUSPEND (an ERP
// may write its lookups so: outputs set, and returned once) answers its one
// row, as EXECUTE PROCEDURE gives it, alone and in a batch, its refusal as
// any procedure's; the health check finds nothing wrong with it.
func TestAReadWithoutSuspend(t *testing.T) {
	cfg := fbtest.Demo(t)
	fbtest.Setup(t, cfg,
		`CREATE OR ALTER PROCEDURE REST_TEST_SALDO (P_CODIGO VARCHAR(20)) RETURNS (CODIGO VARCHAR(20), SALDO NUMERIC(15,2), NOTA BLOB SUB_TYPE TEXT) AS BEGIN
			IF (P_CODIGO = 'NO') THEN EXCEPTION REST_ERROR '***EL SALDO ' || P_CODIGO || ' NO EXISTE***';
			CODIGO = P_CODIGO; SALDO = 12.5; NOTA = 'línea ' || P_CODIGO;
		END`,
		`GRANT USAGE ON EXCEPTION REST_ERROR TO PROCEDURE REST_TEST_SALDO`,
		`GRANT EXECUTE ON PROCEDURE REST_TEST_SALDO TO GATEWAY`)
	h := specAnd(t, demoEnv(t, gateway.Config{}), catalog.Operation{Clave: "Get_Saldo", Endpoint: catalog.ExecuteQuery,
		Procedure: "REST_TEST_SALDO", Params: []catalog.Param{{Name: "CODIGO", MaxLen: 20, Required: true}}})
	saldo := func(code string) string { return `{"CLAVE":"Get_Saldo","CODIGO":"` + code + `"}` }
	answer := func(code string) string {
		return `{"cod_error":0,"data":[{"CODIGO":"` + code + `","SALDO":12.50,"NOTA":"línea ` + code + `"}]}`
	}
	for _, code := range []string{"A1", "B2"} { // the connection's first read, then its prepared one
		if r := do(t, h, http.MethodPost, path("demo", "executequery"), saldo(code)); r.Status != 200 || r.Raw != answer(code) {
			t.Fatalf("%s: %d %s", code, r.Status, r.Raw)
		}
	}
	if r := do(t, h, http.MethodPost, path("demo", "executequery"), saldo("NO")); r.Status != 200 || r.Body.ExExecSQL == nil || !strings.Contains(*r.Body.ExExecSQL, "***EL SALDO NO NO EXISTE***") {
		t.Fatalf("refused: %d %s", r.Status, r.Raw)
	}
	if r := send(t, h, "executequery", "["+saldo("C3")+","+saldo("D4")+"]"); r.status != 200 || r.body != "["+answer("C3")+","+answer("D4")+"]" {
		t.Fatalf("in a batch: %d %s", r.status, r.body)
	}
	if r := do(t, h, http.MethodGet, "/demo/health", ""); r.Status != 200 || r.Raw != `{"cod_error":0,"status":"ok"}` {
		t.Fatalf("health: %d %s", r.Status, r.Raw)
	}
}

// TestClavesOfOneProcedureWithTheirOwnArguments: two CLAVEs may call one
// write procedure, one of them leaving out an input with a default
// (catalog.md); each gets its own block on a connection, whichever ran
// first there (the block was kept by procedure, and the other CLAVE's call
// failed "Wrong number of parameters", answered as the database's refusal).
func TestClavesOfOneProcedureWithTheirOwnArguments(t *testing.T) {
	cfg := fbtest.Demo(t)
	fbtest.Setup(t, cfg,
		`CREATE OR ALTER PROCEDURE REST_TEST_DOS_FORMAS (P_CODIGO VARCHAR(15), P_VECES INTEGER = 7) RETURNS (CODIGO VARCHAR(15), VECES INTEGER) AS BEGIN
			CODIGO = P_CODIGO; VECES = P_VECES;
		END`,
		`GRANT EXECUTE ON PROCEDURE REST_TEST_DOS_FORMAS TO GATEWAY`)
	codigo := catalog.Param{Name: "CODIGO", MaxLen: 15, Required: true}
	h := specAnd(t, demoEnv(t, gateway.Config{}),
		catalog.Operation{Clave: "Set_Dos_Formas", Endpoint: catalog.Execute, Procedure: "REST_TEST_DOS_FORMAS",
			Params: []catalog.Param{codigo, {Name: "VECES", Kind: catalog.Integer, Required: true}}},
		catalog.Operation{Clave: "Set_Una_Forma", Endpoint: catalog.Execute, Procedure: "REST_TEST_DOS_FORMAS",
			Params: []catalog.Param{codigo}})
	for _, c := range []struct{ body, want string }{
		{`{"CLAVE":"Set_Dos_Formas","CODIGO":"A","VECES":2}`, `{"cod_error":0,"data":[{"CODIGO":"A","VECES":2}]}`},
		{`{"CLAVE":"Set_Una_Forma","CODIGO":"B"}`, `{"cod_error":0,"data":[{"CODIGO":"B","VECES":7}]}`},
		{`{"CLAVE":"Set_Dos_Formas","CODIGO":"C","VECES":3}`, `{"cod_error":0,"data":[{"CODIGO":"C","VECES":3}]}`},
		{`{"CLAVE":"Set_Una_Forma","CODIGO":"D"}`, `{"cod_error":0,"data":[{"CODIGO":"D","VECES":7}]}`},
	} {
		if r := do(t, h, http.MethodPost, path("demo", "execute"), c.body); r.Status != 200 || r.Raw != c.want {
			t.Fatalf("%s: HTTP %d %s\nwant %s", c.body, r.Status, r.Raw, c.want)
		}
	}
}

// TestProceduresNamedAsReservedWords: a procedure the ERP created under a
// reserved word ("VALUE", "MERGE") is a plain identifier a catalog may
// name, in either case, and is called as it is named: alone, as a write's
// read-back, and in batches of reads and of writes (written unquoted, SQL
// read the name as its keyword, and every call answered 503).
func TestProceduresNamedAsReservedWords(t *testing.T) {
	cfg := fbtest.Demo(t)
	fbtest.Setup(t, cfg,
		`CREATE OR ALTER PROCEDURE "VALUE" (P_N INTEGER) RETURNS (N INTEGER) AS BEGIN N = P_N; SUSPEND; END`,
		`CREATE OR ALTER PROCEDURE "MERGE" (P_N INTEGER) RETURNS (N INTEGER) AS BEGIN N = P_N + 1; END`,
		`GRANT EXECUTE ON PROCEDURE "VALUE" TO GATEWAY`,
		`GRANT EXECUTE ON PROCEDURE "MERGE" TO GATEWAY`)
	n := []catalog.Param{{Name: "N", Kind: catalog.Integer, Required: true}}
	h := specAnd(t, demoEnv(t, gateway.Config{}),
		catalog.Operation{Clave: "Get_Value", Endpoint: catalog.ExecuteQuery, Procedure: "VALUE", Params: n},
		catalog.Operation{Clave: "Set_Merge", Endpoint: catalog.Execute, Procedure: "merge", Params: n},
		catalog.Operation{Clave: "Set_Merge_Leido", Endpoint: catalog.Execute, Procedure: "Merge", Params: n,
			ReadBack: &catalog.ReadBack{Procedure: "value", Params: []string{"N"}}})
	for _, c := range []struct{ endpoint, body, want string }{
		{"executequery", `{"CLAVE":"Get_Value","N":1}`, `{"cod_error":0,"data":[{"N":1}]}`},
		{"execute", `{"CLAVE":"Set_Merge","N":1}`, `{"cod_error":0,"data":[{"N":2}]}`},
		{"execute", `{"CLAVE":"Set_Merge_Leido","N":5}`, `{"cod_error":0,"data":[{"N":5}]}`},
		{"executequery", `[{"CLAVE":"Get_Value","N":1},{"CLAVE":"Get_Value","N":2}]`, `[{"cod_error":0,"data":[{"N":1}]},{"cod_error":0,"data":[{"N":2}]}]`},
		{"execute", `[{"CLAVE":"Set_Merge","N":1},{"CLAVE":"Set_Merge_Leido","N":{"$from":0,"$field":"N"}}]`, `[{"cod_error":0,"data":[{"N":2}]},{"cod_error":0,"data":[{"N":2}]}]`},
	} {
		if r := send(t, h, c.endpoint, c.body); r.status != 200 || r.body != c.want {
			t.Errorf("%s: HTTP %d %s\nwant %s", c.body, r.status, r.body, c.want)
		}
	}
	if r := do(t, h, http.MethodGet, "/demo/health", ""); r.Status != 200 || r.Raw != `{"cod_error":0,"status":"ok"}` {
		t.Fatalf("health: %d %s", r.Status, r.Raw)
	}
}

// TestReadsDoNotShareATransaction: a read procedure may keep state for its
// transaction (a global temporary table ON COMMIT DELETE ROWS, a
// USER_TRANSACTION context variable: Firebird lets a read-only
// transaction write both); each request's read sees none of another's,
// another token's included, as each would in a transaction of its own
// (a connection's read transaction was kept between requests, and the
// second read counted the first's rows and read its context).
func TestReadsDoNotShareATransaction(t *testing.T) {
	cfg := fbtest.Demo(t)
	fbtest.Setup(t, cfg,
		`EXECUTE BLOCK AS BEGIN
			IF (NOT EXISTS (SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'TEST_GTT_LECTURA')) THEN
				EXECUTE STATEMENT 'CREATE GLOBAL TEMPORARY TABLE TEST_GTT_LECTURA (X INTEGER) ON COMMIT DELETE ROWS';
		END`,
		`CREATE OR ALTER PROCEDURE REST_TEST_ESTADO (P_V VARCHAR(10)) RETURNS (N INTEGER, ANTES VARCHAR(10)) AS BEGIN
			INSERT INTO TEST_GTT_LECTURA VALUES (1); SELECT COUNT(*) FROM TEST_GTT_LECTURA INTO N;
			ANTES = RDB$GET_CONTEXT('USER_TRANSACTION', 'TEST_ESTADO');
			RDB$SET_CONTEXT('USER_TRANSACTION', 'TEST_ESTADO', P_V); SUSPEND;
		END`,
		`GRANT SELECT, INSERT ON TEST_GTT_LECTURA TO PROCEDURE REST_TEST_ESTADO`,
		`GRANT EXECUTE ON PROCEDURE REST_TEST_ESTADO TO GATEWAY`)
	e := newEnv(t, gateway.Config{}, map[string]any{"demo": tenants.Instance{Connection: cfg}})
	h := specAnd(t, e, catalog.Operation{Clave: "Get_Estado", Endpoint: catalog.ExecuteQuery, Procedure: "REST_TEST_ESTADO",
		Params: []catalog.Param{{Name: "V", MaxLen: 10, Required: true}}})
	want := `{"cod_error":0,"data":[{"N":1,"ANTES":null}]}`
	for i, token := range []string{fbtest.Token(t, e.acc, "demo"), fbtest.Token(t, e.acc, "demo"), fbtest.Token(t, e.acc, "demo")} {
		req := httptest.NewRequest(http.MethodPost, path("demo", "executequery"), strings.NewReader(fmt.Sprintf(`{"CLAVE":"Get_Estado","V":"secreto%d"}`, i)))
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 || rec.Body.String() != want {
			t.Fatalf("read %d: HTTP %d %s, want %s", i, rec.Code, rec.Body, want)
		}
	}
}

// TestAProceduresOwnBlockLineIsKept: a procedure that raises inside a block
// it runs (EXECUTE STATEMENT 'EXECUTE BLOCK …') has that block's position
// in its stack, as isql prints it; a write, run inside the gateway's own
// block, loses only the gateway's position, and answers as the read of the
// same procedure does (it lost both, leaving an empty line).
func TestAProceduresOwnBlockLineIsKept(t *testing.T) {
	cfg := fbtest.Demo(t)
	fbtest.Setup(t, cfg,
		`CREATE OR ALTER PROCEDURE REST_TEST_ES_BLOQUE (P_ID INTEGER) RETURNS (R INTEGER) AS BEGIN
			R = P_ID;
			EXECUTE STATEMENT 'EXECUTE BLOCK AS BEGIN IF (1 = 1) THEN EXCEPTION REST_ERROR ''dinámico ' || P_ID || '''; END';
			SUSPEND;
		END`,
		`GRANT USAGE ON EXCEPTION REST_ERROR TO PROCEDURE REST_TEST_ES_BLOQUE`,
		`GRANT USAGE ON EXCEPTION REST_ERROR TO GATEWAY`,
		`GRANT EXECUTE ON PROCEDURE REST_TEST_ES_BLOQUE TO GATEWAY`)
	id := []catalog.Param{{Name: "ID", Kind: catalog.Integer, Required: true}}
	h := specAnd(t, demoEnv(t, gateway.Config{}),
		catalog.Operation{Clave: "Get_Es_Bloque", Endpoint: catalog.ExecuteQuery, Procedure: "REST_TEST_ES_BLOQUE", Params: id},
		catalog.Operation{Clave: "Set_Es_Bloque", Endpoint: catalog.Execute, Procedure: "REST_TEST_ES_BLOQUE", Params: id})
	read := send(t, h, "executequery", `{"CLAVE":"Get_Es_Bloque","ID":4}`)
	if read.status != 200 || !strings.Contains(read.body, `dinámico 4\r\nAt block line: 1, col: `) || !strings.Contains(read.body, `At procedure 'REST_TEST_ES_BLOQUE' line: 3`) {
		t.Fatalf("the read: %d %s", read.status, read.body)
	}
	for _, c := range []struct{ body, want string }{
		{`{"CLAVE":"Set_Es_Bloque","ID":4}`, read.body},
		{`[{"CLAVE":"Set_Es_Bloque","ID":4}]`, "[" + read.body + "]"},
	} {
		if got := send(t, h, "execute", c.body); got.status != 200 || got.body != c.want {
			t.Errorf("%s: %d %s\nwant %s", c.body, got.status, got.body, c.want)
		}
	}
}
