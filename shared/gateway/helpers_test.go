package gateway_test

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/access"
	"github.com/erp-gateway/gateway/shared/calls"
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/idempotency"
	"github.com/erp-gateway/gateway/shared/tenants"
)

const base = "/RestServerIsapi.dll/api/v1/TServiceRestInterface/"

func path(instance, endpoint string) string { return "/" + instance + base + endpoint }

// countingDB is the real pools, counting the calls that reach them.
type countingDB struct {
	*idempotency.Database
	calls atomic.Int64
	pools *firebird.Pools // the store under it, for tests that run statements of their own
}

func (c *countingDB) Run(ctx context.Context, t erp.Target, q *calls.Sequence, k *erp.Key, answer func() []byte) ([]byte, bool, error) {
	c.calls.Add(1)
	return c.Database.Run(ctx, t, q, k, answer)
}

// env is a handler over real pools and a real instances file.
type env struct {
	h   http.Handler
	cat *catalog.Catalog
	src *tenants.File
	acc *fbtest.Keys
	db  *countingDB
	log *strings.Builder
}

// specAnd is a handler of e's serving the specification's operations and
// ops, logging nowhere: its health check looks for those procedures only,
// not for the ones other tests create.
func specAnd(t testing.TB, e *env, ops ...catalog.Operation) http.Handler {
	t.Helper()
	cat, err := catalog.New(append(catalog.DefaultOperations(), ops...))
	if err != nil {
		t.Fatal(err)
	}
	return gateway.New(gateway.Config{}, cat, access.Static(e.acc.Document), e.src, e.db, slog.New(slog.DiscardHandler))
}

// named is the operation of ops named clave.
func named(t testing.TB, ops []catalog.Operation, clave string) catalog.Operation {
	t.Helper()
	for _, op := range ops {
		if op.Clave == clave {
			return op
		}
	}
	t.Fatalf("no operation %s", clave)
	return catalog.Operation{}
}

// testOperations adds to the specification's table what only tests use: a
// procedure returning every Firebird type, one that tests alter, one raising
// exceptions (REST_TEST_PAGO, TestExceptionRaisedUsingArguments), a write
// without a natural key (REST_TEST_PAGAR, setupKeys) and one that waits
// for a lock (REST_TEST_ESPERAR), one
// returning as many wide rows as asked (REST_TEST_FILAS, setupRows), a write
// whose read-back fails and one whose read-back is too large to answer, and
// payments read back in values of every kind (setupValores).
func testOperations() []catalog.Operation {
	ops := catalog.DefaultOperations()
	var setTerceros catalog.Operation
	for _, op := range ops {
		if op.Clave == "Set_Terceros" {
			setTerceros = op
		}
	}
	broken := setTerceros
	broken.Clave = "Set_Terceros_ReadBackFails"
	broken.ReadBack = &catalog.ReadBack{Procedure: "REST_SELECT_REFERENCIA", Params: []string{"CODIGO"}}
	big := setTerceros
	big.Clave = "Set_Terceros_Answer_Too_Large"
	big.ReadBack = &catalog.ReadBack{Procedure: "REST_TEST_FILAS", Params: []string{"CODIGO"}}
	rows := []catalog.Param{{Name: "N", MaxLen: 15, Required: true}}
	return append(ops,
		catalog.Operation{Clave: "Get_Tipos", Endpoint: catalog.ExecuteQuery, Procedure: "REST_TEST_TIPOS"},
		catalog.Operation{Clave: "Get_Version", Endpoint: catalog.ExecuteQuery, Procedure: "REST_TEST_VERSION"},
		catalog.Operation{Clave: "Get_Filas_100", Endpoint: catalog.ExecuteQuery, Procedure: "REST_TEST_FILAS", Params: rows, MaxRows: 100},
		catalog.Operation{Clave: "Get_Filas", Endpoint: catalog.ExecuteQuery, Procedure: "REST_TEST_FILAS", Params: rows},
		catalog.Operation{Clave: "Get_Blobs", Endpoint: catalog.ExecuteQuery, Procedure: "REST_TEST_BLOBS", Params: rows},
		catalog.Operation{Clave: "Get_Pago", Endpoint: catalog.ExecuteQuery, Procedure: "REST_TEST_PAGO", Params: rows},
		catalog.Operation{Clave: "Get_Lista", Endpoint: catalog.ExecuteQuery, Procedure: "REST_TEST_LISTA", Params: rows},
		// A read with a side effect: it pays (REST_TEST_EFECTO, scope_test.go).
		catalog.Operation{Clave: "Get_Efecto", Endpoint: catalog.ExecuteQuery, Procedure: "REST_TEST_EFECTO", Params: []catalog.Param{{Name: "CODIGO", MaxLen: 20, Required: true}}},
		catalog.Operation{Clave: "Get_Lista_50000", Endpoint: catalog.ExecuteQuery, Procedure: "REST_TEST_LISTA", Params: rows, MaxRows: 50000},
		catalog.Operation{Clave: "Get_Lista_Falla", Endpoint: catalog.ExecuteQuery, Procedure: "REST_TEST_LISTA_FALLA", Params: rows},
		catalog.Operation{Clave: "Set_Pago", Endpoint: catalog.Execute, Procedure: "REST_TEST_PAGAR",
			Params:   []catalog.Param{{Name: "CODIGO", MaxLen: 20, Required: true}, {Name: "VALOR", Kind: catalog.Integer, Bits: 32}},
			ReadBack: &catalog.ReadBack{Procedure: "REST_TEST_PAGOS", Params: []string{"CODIGO"}}},
		catalog.Operation{Clave: "Set_Pago_Espera", Endpoint: catalog.Execute, Procedure: "REST_TEST_ESPERAR",
			Params:   []catalog.Param{{Name: "CODIGO", MaxLen: 20, Required: true}, {Name: "VALOR", Kind: catalog.Integer, Bits: 32}},
			ReadBack: &catalog.ReadBack{Procedure: "REST_TEST_PAGOS", Params: []string{"CODIGO"}}},
		broken, big,
		// A payment read back by a procedure that answers no row
		// (document_test.go).
		catalog.Operation{Clave: "Set_Pago_Sin_Filas", Endpoint: catalog.Execute, Procedure: "REST_TEST_PAGAR",
			Params:   []catalog.Param{{Name: "CODIGO", MaxLen: 20, Required: true}, {Name: "VALOR", Kind: catalog.Integer, Bits: 32}},
			ReadBack: &catalog.ReadBack{Procedure: "REST_TEST_NADA", Params: []string{"CODIGO"}}},
		catalog.Operation{Clave: "Set_Pedido", Endpoint: catalog.Execute, Procedure: "REST_INSERT_PEDIDO",
			Params: []catalog.Param{{Name: "TERCERO", MaxLen: 15, Required: true}, {Name: "FECHA", Kind: catalog.Date}, {Name: "NOTA", MaxLen: 200}}},
		catalog.Operation{Clave: "Set_Pedido_Linea", Endpoint: catalog.Execute, Procedure: "REST_INSERT_PEDIDO_LINEA",
			Params: []catalog.Param{{Name: "NUMERO", Kind: catalog.Integer, Bits: 32, Required: true}, {Name: "REFERENCIA", MaxLen: 20, Required: true},
				{Name: "CANTIDAD", Kind: catalog.Decimal, Precision: 15, Scale: 4, Required: true}}},
		catalog.Operation{Clave: "Get_Pedido", Endpoint: catalog.ExecuteQuery, Procedure: "REST_SELECT_PEDIDO",
			Params: []catalog.Param{{Name: "NUMERO", Kind: catalog.Integer, Bits: 32, Required: true}}},
		// Writes that return their rows by SUSPEND (setupKeys).
		catalog.Operation{Clave: "Set_Tres", Endpoint: catalog.Execute, Procedure: "REST_TEST_TRES", Params: []catalog.Param{{Name: "CODIGO", MaxLen: 20, Required: true}}},
		catalog.Operation{Clave: "Set_Tres_Leido", Endpoint: catalog.Execute, Procedure: "REST_TEST_TRES", Params: []catalog.Param{{Name: "CODIGO", MaxLen: 20, Required: true}},
			ReadBack: &catalog.ReadBack{Procedure: "REST_TEST_PAGOS", Params: []string{"CODIGO"}}},
		catalog.Operation{Clave: "Set_Uno", Endpoint: catalog.Execute, Procedure: "REST_TEST_UNO", Params: []catalog.Param{{Name: "CODIGO", MaxLen: 20, Required: true}}},
		valores("Set_Valores", "REST_TEST_VALORES"), valores("Set_Valores_Flotantes", "REST_TEST_VALORES_F"), valores("Set_Valores_Largos", "REST_TEST_VALORES_L"))
}

// valores is a payment (REST_TEST_PAGAR) read back by procedure
// (setupValores).
func valores(clave, procedure string) catalog.Operation {
	return catalog.Operation{Clave: clave, Endpoint: catalog.Execute, Procedure: "REST_TEST_PAGAR",
		Params:   []catalog.Param{{Name: "CODIGO", MaxLen: 20, Required: true}, {Name: "VALOR", Kind: catalog.Integer, Bits: 32}},
		ReadBack: &catalog.ReadBack{Procedure: procedure, Params: []string{"CODIGO"}}}
}

func newEnv(t testing.TB, cfg gateway.Config, instances map[string]any) *env {
	t.Helper()
	return newEnvOpts(t, cfg, firebird.Options{}, instances)
}

// newEnvOpts is newEnv with pools tuned by opts, and expired keys swept
// every sweepEvery (idempotency.DefaultSweepEvery when not given).
func newEnvOpts(t testing.TB, cfg gateway.Config, opts firebird.Options, instances map[string]any, sweepEvery ...time.Duration) *env {
	t.Helper()
	data, err := json.Marshal(instances)
	if err != nil {
		t.Fatal(err)
	}
	var open []string
	for name, inst := range instances {
		if _, ok := inst.(anonymousInstance); ok {
			open = append(open, name)
		}
	}
	acc, _ := fbtest.Access(t, open...)
	file := filepath.Join(t.TempDir(), "instances.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := tenants.LoadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New(testOperations())
	if err != nil {
		t.Fatal(err)
	}
	logs := &strings.Builder{}
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// As the binaries wire them: the longest deadline the handler gives a
	// call bounds an orphan's age, and the pools log to the handler's log.
	if opts.LongestCall == 0 {
		opts.LongestCall = max(cmp.Or(cfg.Timeout, gateway.DefaultTimeout), cmp.Or(cfg.BatchTimeout, gateway.DefaultBatchTimeout))
	}
	if opts.Log == nil {
		opts.Log = log
	}
	pools := firebird.NewPools(opts)
	t.Cleanup(func() { pools.Close() })
	db := &countingDB{Database: idempotency.New(pools, append(sweepEvery, 0)[0]), pools: pools}
	return &env{h: gateway.New(cfg, cat, access.Static(acc.Document), src, db, log), cat: cat, src: src, acc: acc, db: db, log: logs}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// response is what a client sees.
type response struct {
	Status int
	Header http.Header
	Raw    string
	Body   struct {
		CodError  *int             `json:"cod_error"`
		Data      []map[string]any `json:"data"`
		ExExecSQL *string          `json:"ex_execsql"`
	}
}

func (e *env) post(t testing.TB, p, body string) response {
	t.Helper()
	return do(t, e.h, http.MethodPost, p, body)
}

func do(t testing.TB, h http.Handler, method, p, body string) response {
	t.Helper()
	req := httptest.NewRequest(method, p, strings.NewReader(body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var r response
	r.Status, r.Header = rec.Code, rec.Header()
	r.Raw = rec.Body.String()
	if ct, ns := rec.Header().Get("Content-Type"), rec.Header().Get("X-Content-Type-Options"); ct != "application/json; charset=utf-8" || ns != "nosniff" {
		t.Fatalf("%s %s: Content-Type %q, X-Content-Type-Options %q", method, p, ct, ns)
	}
	dec := json.NewDecoder(strings.NewReader(r.Raw))
	dec.UseNumber()
	if err := dec.Decode(&r.Body); err != nil {
		t.Fatalf("%s %s: body is not JSON: %v: %s", method, p, err, r.Raw)
	}
	if r.Body.CodError == nil {
		t.Fatalf("%s %s: no cod_error in %s", method, p, r.Raw)
	}
	return r
}

// setupTypes creates the test-only procedure returning every type.
func setupTypes(t testing.TB, cfg erp.Connection) {
	t.Helper()
	fbtest.Setup(t, cfg,
		`CREATE OR ALTER PROCEDURE REST_TEST_TIPOS RETURNS (
			I INTEGER, BI BIGINT, N NUMERIC(18,4), D DOUBLE PRECISION, F FLOAT, B BOOLEAN,
			DT DATE, TM TIME, TS TIMESTAMP, BT BLOB SUB_TYPE TEXT, BB BLOB SUB_TYPE BINARY,
			C CHAR(10), V VARCHAR(10), NU VARCHAR(10), E VARCHAR(10), S SMALLINT, DC DECIMAL(9,2),
			O VARCHAR(4) CHARACTER SET OCTETS)
		AS BEGIN
			I = 42; BI = 9223372036854775807; N = 98765432109876.5432; D = 0.1; F = 2.5; B = TRUE;
			DT = DATE '2024-02-29'; TM = TIME '13:14:15.1234'; TS = TIMESTAMP '2024-02-29 13:14:15.1234';
			BT = 'línea 1' || ASCII_CHAR(10) || 'línea 2'; BB = x'00FF10'; C = 'ab'; V = ''; NU = NULL;
			E = 'ñandú'; S = -7; DC = -0.5; O = x'00FF41C3';
			SUSPEND;
			I = 43; N = -0.0001; B = FALSE; C = NULL;
			SUSPEND;
		END`,
		`GRANT EXECUTE ON PROCEDURE REST_TEST_TIPOS TO GATEWAY`)
}

// setupRows creates REST_TEST_FILAS(P_N): P_N rows of the attachment's id and
// 4000 characters ", which the answer's JSON writes as \" and Lambda's
// response, a JSON string, as \\\".
func setupRows(t testing.TB, cfg erp.Connection) {
	t.Helper()
	fbtest.Setup(t, cfg,
		`CREATE OR ALTER PROCEDURE REST_TEST_FILAS (P_N VARCHAR(15)) RETURNS (I INTEGER, CONEXION BIGINT, TEXTO VARCHAR(4000))
		AS BEGIN
			I = 0;
			CONEXION = CURRENT_CONNECTION;
			TEXTO = LPAD('', 4000, '"');
			WHILE (I < CAST(P_N AS INTEGER)) DO BEGIN I = I + 1; SUSPEND; END
		END`,
		`GRANT EXECUTE ON PROCEDURE REST_TEST_FILAS TO GATEWAY`)
}

// setupBlobs creates REST_TEST_BLOBS(P_N): P_N rows with a text BLOB in
// UTF8 and a binary one; row 25's text is 70,001 characters (ñ, two bytes
// each in UTF8, among them), row 3's BLOBs are NULL and row 4's empty.
func setupBlobs(t testing.TB, cfg erp.Connection) {
	t.Helper()
	fbtest.Setup(t, cfg,
		`CREATE OR ALTER PROCEDURE REST_TEST_BLOBS (P_N VARCHAR(15))
		RETURNS (I INTEGER, NOTA BLOB SUB_TYPE TEXT CHARACTER SET UTF8, NOMBRE VARCHAR(40), FOTO BLOB SUB_TYPE BINARY)
		AS
		DECLARE J INTEGER;
		BEGIN
			I = 0;
			WHILE (I < CAST(P_N AS INTEGER)) DO BEGIN
				I = I + 1;
				NOMBRE = 'fila ' || I;
				NOTA = 'Descripción ' || I || ASCII_CHAR(10) || 'con "comillas" y \ barra';
				FOTO = x'00FF10' || CAST(I AS VARCHAR(10));
				IF (I = 3) THEN BEGIN NOTA = NULL; FOTO = NULL; END
				IF (I = 4) THEN BEGIN NOTA = ''; FOTO = CAST('' AS BLOB SUB_TYPE BINARY); END
				IF (I = 25) THEN BEGIN
					-- A VARCHAR holds at most 32,765 bytes: the BLOB grows by pieces.
					NOTA = ''; J = 0;
					WHILE (J < 10) DO BEGIN NOTA = NOTA || LPAD('', 7000, 'ñ'); J = J + 1; END
					NOTA = NOTA || 'x';
				END
				SUSPEND;
			END
		END`,
		`GRANT EXECUTE ON PROCEDURE REST_TEST_BLOBS TO GATEWAY`)
}

// count runs a COUNT query in a transaction of its own, so monitoring tables
// are read fresh.
func count(t testing.TB, db *sql.DB, query string, args ...any) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Commit()
	var n int
	if err := tx.QueryRowContext(ctx, query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}
