package gateway_test

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/access"
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/gateway"
)

// setupDoctor builds, in the demo test database, a procedure for each way
// an ERP can disagree with a catalog.
func setupDoctor(t testing.TB, cfg erp.Connection) {
	t.Helper()
	admin := fbtest.Open(t, fbtest.Admin(t, cfg))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, stmt := range []string{
		`CREATE OR ALTER PROCEDURE REST_DOC_LARGO (P_CODIGO VARCHAR(30)) RETURNS (X INTEGER) AS BEGIN X = 1; SUSPEND; END`,
		`CREATE OR ALTER PROCEDURE REST_DOC_CORTO (P_CODIGO VARCHAR(5)) RETURNS (X INTEGER) AS BEGIN X = 1; SUSPEND; END`,
		`CREATE OR ALTER PROCEDURE REST_DOC_SIN_PERMISO (P_CODIGO VARCHAR(15)) RETURNS (X INTEGER) AS BEGIN X = 1; SUSPEND; END`,
		`CREATE OR ALTER PROCEDURE REST_DOC_BLOB (P_CODIGO VARCHAR(15)) RETURNS (B BLOB SUB_TYPE -1) AS BEGIN B = 'x'; SUSPEND; END`,
		`GRANT EXECUTE ON PROCEDURE REST_DOC_LARGO TO GATEWAY`,
		`GRANT EXECUTE ON PROCEDURE REST_DOC_CORTO TO GATEWAY`,
		`GRANT EXECUTE ON PROCEDURE REST_DOC_BLOB TO GATEWAY`,
		`REVOKE ALL ON PROCEDURE REST_DOC_SIN_PERMISO FROM GATEWAY`,
		// Raises an exception without USAGE on it: Firebird 3 refuses to
		// prepare it, even for calls that would not raise.
		`CREATE OR ALTER EXCEPTION REST_DOC_SIN_USAGE_E 'sin usage'`,
		`CREATE OR ALTER PROCEDURE REST_DOC_SIN_USAGE (P_CODIGO VARCHAR(15)) RETURNS (X INTEGER) AS BEGIN IF (P_CODIGO = '') THEN EXCEPTION REST_DOC_SIN_USAGE_E; X = 1; SUSPEND; END`,
		`GRANT EXECUTE ON PROCEDURE REST_DOC_SIN_USAGE TO GATEWAY`,
		`REVOKE USAGE ON EXCEPTION REST_DOC_SIN_USAGE_E FROM PROCEDURE REST_DOC_SIN_USAGE`,
	} {
		if _, err := admin.ExecContext(ctx, stmt); err != nil && !strings.HasPrefix(stmt, "REVOKE") {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

// sinUsage is the doctor's finding on REST_DOC_SIN_USAGE.
const sinUsage = "REST_DOC_SIN_USAGE (Get_Doc_Sin_Usage): it raises REST_DOC_SIN_USAGE_E without USAGE, so Firebird refuses to prepare it and every call fails (GRANT USAGE ON EXCEPTION REST_DOC_SIN_USAGE_E TO PROCEDURE REST_DOC_SIN_USAGE)"

// doctorOperations: one operation per procedure of setupDoctor, and one whose
// procedure does not exist, each taking CODIGO of up to 15 characters.
func doctorOperations() []catalog.Operation {
	codigo := []catalog.Param{{Name: "CODIGO", MaxLen: 15, Required: true}}
	op := func(clave, procedure string) catalog.Operation {
		return catalog.Operation{Clave: clave, Endpoint: catalog.ExecuteQuery, Procedure: procedure, Params: codigo}
	}
	return []catalog.Operation{
		op("Get_Doc_Largo", "REST_DOC_LARGO"),
		op("Get_Doc_Corto", "REST_DOC_CORTO"),
		op("Get_Doc_Sin_Permiso", "REST_DOC_SIN_PERMISO"),
		op("Get_Doc_Blob", "REST_DOC_BLOB"),
		op("Get_Doc_Falta", "REST_DOC_NO_EXISTE"),
		op("Get_Doc_Sin_Usage", "REST_DOC_SIN_USAGE"),
	}
}

func TestDoctorNamesEachDisagreement(t *testing.T) {
	setupDoctor(t, fbtest.Demo(t))
	cat, err := catalog.New(doctorOperations())
	if err != nil {
		t.Fatal(err)
	}
	procs, err := firebird.Describe(context.Background(), fbtest.Demo(t), cat.Procedures())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range cat.Diagnose(procs, "GATEWAY") {
		got = append(got, f.Text)
	}
	want := []string{
		"REST_DOC_BLOB (Get_Doc_Blob): output B is BLOB SUB_TYPE -1, which the gateway has no JSON encoding for",
		"REST_DOC_CORTO (Get_Doc_Corto): input P_CODIGO is VARCHAR(5) in the database, the catalog allows 15 characters: longer values fail in the database",
		"REST_DOC_NO_EXISTE (Get_Doc_Falta): the procedure does not exist in the database",
		"REST_DOC_LARGO (Get_Doc_Largo): input P_CODIGO is VARCHAR(30) in the database, the catalog allows 15 characters",
		"REST_DOC_SIN_PERMISO (Get_Doc_Sin_Permiso): the gateway's user may not execute it (GRANT EXECUTE ON PROCEDURE REST_DOC_SIN_PERMISO TO GATEWAY)",
		sinUsage,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The demo ERP agrees with the demo catalog.
	demo, err := catalog.LoadFile("../../infra/catalog.demo.json")
	if err != nil {
		t.Fatal(err)
	}
	procs, err = firebird.Describe(context.Background(), fbtest.Demo(t), demo.Procedures())
	if err != nil {
		t.Fatal(err)
	}
	if f := demo.Diagnose(procs, "GATEWAY"); len(f) > 0 {
		t.Fatalf("the demo ERP disagrees with its catalog: %v", f)
	}
}

// doctorEnv serves the doctor's operations and the specification's.
func doctorEnv(t *testing.T) (http.Handler, *strings.Builder) {
	t.Helper()
	setupDoctor(t, fbtest.Demo(t))
	cat, err := catalog.New(append(catalog.DefaultOperations(), doctorOperations()...))
	if err != nil {
		t.Fatal(err)
	}
	e := demoEnv(t, gateway.Config{})
	logs := &strings.Builder{}
	return gateway.New(gateway.Config{}, cat, access.Static(e.acc.Document), e.src, e.db, slog.New(slog.NewTextHandler(&lockedWriter{w: logs}, nil))), logs
}

func TestACallTheDatabaseCannotRunIsExplained(t *testing.T) {
	h, logs := doctorEnv(t)
	for range 3 {
		r := do(t, h, http.MethodPost, path("demo", "executequery"), `{"CLAVE":"Get_Doc_Falta","CODIGO":"1"}`)
		want := "the database of instance demo cannot run Get_Doc_Falta right now (REST_DOC_NO_EXISTE (Get_Doc_Falta): the procedure does not exist in the database); try again later"
		if r.Status != 503 || *r.Body.CodError != 1201 || *r.Body.ExExecSQL != want {
			t.Fatalf("HTTP %d %s", r.Status, r.Raw)
		}
	}
	r := do(t, h, http.MethodPost, path("demo", "executequery"), `{"CLAVE":"Get_Doc_Sin_Permiso","CODIGO":"1"}`)
	if want := "(REST_DOC_SIN_PERMISO (Get_Doc_Sin_Permiso): the gateway's user may not execute it (GRANT EXECUTE ON PROCEDURE REST_DOC_SIN_PERMISO TO GATEWAY))"; r.Status != 503 || !strings.Contains(r.Raw, want) {
		t.Fatalf("HTTP %d %s", r.Status, r.Raw)
	}
	// Every call of a procedure raising an exception without USAGE fails,
	// also one that would not raise it.
	r = do(t, h, http.MethodPost, path("demo", "executequery"), `{"CLAVE":"Get_Doc_Sin_Usage","CODIGO":"1"}`)
	if r.Status != 503 || *r.Body.CodError != 1201 || !strings.Contains(r.Raw, "("+sinUsage+")") {
		t.Fatalf("HTTP %d %s", r.Status, r.Raw)
	}
	if n := strings.Count(logs.String(), "the catalog and the database disagree"); n != 1 {
		t.Fatalf("the finding was logged %d times for 3 requests, want once:\n%s", n, logs)
	}
}

func TestHealth(t *testing.T) {
	h, logs := doctorEnv(t)
	r := do(t, h, http.MethodGet, "/demo/health", "")
	if r.Status != 503 || *r.Body.CodError != 1201 || !strings.Contains(r.Raw, `"status":"failing","findings":[{"clave":"Get_Doc_Blob","fatal":true,"finding":"REST_DOC_BLOB (Get_Doc_Blob): output B is BLOB SUB_TYPE -1`) ||
		!strings.Contains(r.Raw, `{"clave":"Get_Doc_Largo","fatal":false,"finding":"REST_DOC_LARGO (Get_Doc_Largo): input P_CODIGO is VARCHAR(30) in the database, the catalog allows 15 characters"}`) {
		t.Fatalf("HTTP %d %s", r.Status, r.Raw)
	}
	const disagree = `msg="the catalog and the database disagree"`
	if !strings.Contains(logs.String(), "level=ERROR "+disagree) {
		t.Fatalf("failing, logged:\n%s", logs)
	}

	// The specification's catalog alone: the test-only procedures of other
	// tests may not exist yet.
	e := demoEnv(t, gateway.Config{})

	// Warnings alone fail no call, and are logged as warnings: a monitor
	// asking every minute must not raise an error a minute.
	cat, err := catalog.New(append(catalog.DefaultOperations(), named(t, doctorOperations(), "Get_Doc_Largo")))
	if err != nil {
		t.Fatal(err)
	}
	logs = &strings.Builder{}
	warned := gateway.New(gateway.Config{}, cat, access.Static(e.acc.Document), e.src, e.db, slog.New(slog.NewTextHandler(&lockedWriter{w: logs}, nil)))
	if r := do(t, warned, http.MethodGet, "/demo/health", ""); r.Status != 200 || !strings.Contains(r.Raw, `"status":"warnings"`) ||
		!strings.Contains(logs.String(), "level=WARN "+disagree) || strings.Contains(logs.String(), "level=ERROR") {
		t.Fatalf("HTTP %d %s, logged:\n%s", r.Status, r.Raw, logs)
	}

	// A procedure that raises an exception without USAGE on it fails every
	// call: the health check fails, as for any fatal finding.
	r = do(t, specAnd(t, e, named(t, doctorOperations(), "Get_Doc_Sin_Usage")), http.MethodGet, "/demo/health", "")
	if want := `{"cod_error":1201,"status":"failing","findings":[{"clave":"Get_Doc_Sin_Usage","fatal":true,"finding":` + strconv.Quote(sinUsage) + `}]}`; r.Status != 503 || r.Raw != want {
		t.Fatalf("HTTP %d %s\nwant 503 %s", r.Status, r.Raw, want)
	}

	spec := gateway.New(gateway.Config{}, catalog.Default(), access.Static(e.acc.Document), e.src, e.db, slog.New(slog.DiscardHandler))
	tests := []struct {
		name, method, path string
		status             int
		body               string
	}{
		{"the specification's catalog on the demo ERP", http.MethodGet, "/demo/health", 200, `{"cod_error":0,"status":"ok"}`},
		{"a path the deployment does not have", http.MethodGet, "/prod/demo/health", 404, `"cod_error":1101`},
		{"an unknown instance is any wrong token", http.MethodGet, "/nadie/health", 401, `"cod_error":1105`},
		{"only GET", http.MethodPost, "/demo/health", 405, `"cod_error":1102`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, spec, tt.method, tt.path, "")
			if r.Status != tt.status || !strings.Contains(r.Raw, tt.body) {
				t.Fatalf("HTTP %d %s", r.Status, r.Raw)
			}
		})
	}
}

// TestHealthSeesAProcedureChangedAtOnce: after an ALTER or DROP PROCEDURE,
// the next health check (past its second of reuse) and the next failing call
// say what changed, though the description a call is explained from is kept
// a minute; an input added with a default changes nothing a call sees.
func TestHealthSeesAProcedureChangedAtOnce(t *testing.T) {
	admin := fbtest.Open(t, fbtest.Admin(t, fbtest.Demo(t)))
	exec := func(stmt string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	exec(`CREATE OR ALTER PROCEDURE REST_DOC_EFIMERO (P_CODIGO VARCHAR(15)) RETURNS (X INTEGER) AS BEGIN X = 1; SUSPEND; END`)
	exec(`GRANT EXECUTE ON PROCEDURE REST_DOC_EFIMERO TO GATEWAY`)
	efimero := catalog.Operation{Clave: "Get_Doc_Efimero", Endpoint: catalog.ExecuteQuery,
		Procedure: "REST_DOC_EFIMERO", Params: []catalog.Param{{Name: "CODIGO", MaxLen: 15, Required: true}}}
	h := specAnd(t, demoEnv(t, gateway.Config{}), efimero)
	health := func(status int, body string) {
		t.Helper()
		if r := do(t, h, http.MethodGet, "/demo/health", ""); r.Status != status || r.Raw != body {
			t.Fatalf("health: HTTP %d %s\nwant %d %s", r.Status, r.Raw, status, body)
		}
	}
	// Past the health check's reuse of a reading (healthReuse, doctor.go).
	pastReuse := func() { time.Sleep(1100 * time.Millisecond) }

	health(200, `{"cod_error":0,"status":"ok"}`)

	exec(`ALTER PROCEDURE REST_DOC_EFIMERO (P_CODIGO VARCHAR(15), P_MONEDA CHAR(3)) RETURNS (X INTEGER) AS BEGIN X = 1; SUSPEND; END`)
	pastReuse()
	added := "REST_DOC_EFIMERO (Get_Doc_Efimero): the database declares 2 input parameters, the catalog 1: the catalog has no parameter for P_MONEDA"
	// The call fails; the kept description sees nothing wrong with it, so
	// the database is read again to say why.
	r := do(t, h, http.MethodPost, path("demo", "executequery"), `{"CLAVE":"Get_Doc_Efimero","CODIGO":"1"}`)
	if r.Status != 503 || *r.Body.CodError != 1201 || !strings.Contains(r.Raw, "("+added+")") {
		t.Fatalf("HTTP %d %s", r.Status, r.Raw)
	}
	health(503, `{"cod_error":1201,"status":"failing","findings":[{"clave":"Get_Doc_Efimero","fatal":true,"finding":`+strconv.Quote(added)+`}]}`)

	exec(`DROP PROCEDURE REST_DOC_EFIMERO`)
	pastReuse()
	health(503, `{"cod_error":1201,"status":"failing","findings":[{"clave":"Get_Doc_Efimero","fatal":true,"finding":"REST_DOC_EFIMERO (Get_Doc_Efimero): the procedure does not exist in the database"}]}`)

	// An upgrade as an ERP's are compatible: an input added with a default,
	// which the catalog's calls leave out. (A gateway of its own: its
	// attachments see the procedure as it is now.)
	exec(`CREATE PROCEDURE REST_DOC_EFIMERO (P_CODIGO VARCHAR(15), P_MONEDA CHAR(3) = 'COP') RETURNS (X INTEGER) AS BEGIN X = IIF(P_MONEDA = 'COP', 2, 0); SUSPEND; END`)
	exec(`GRANT EXECUTE ON PROCEDURE REST_DOC_EFIMERO TO GATEWAY`)
	h = specAnd(t, demoEnv(t, gateway.Config{}), efimero)
	health(200, `{"cod_error":0,"status":"ok"}`)
	if r := do(t, h, http.MethodPost, path("demo", "executequery"), `{"CLAVE":"Get_Doc_Efimero","CODIGO":"1"}`); r.Status != 200 || r.Raw != `{"cod_error":0,"data":[{"X":2}]}` {
		t.Fatalf("a call leaving the defaulted input out: HTTP %d %s", r.Status, r.Raw)
	}
	exec(`DROP PROCEDURE REST_DOC_EFIMERO`)
}

// describeCounter is the real pools, counting the descriptions read.
type describeCounter struct {
	*countingDB
	describes atomic.Int64
}

func (d *describeCounter) Describe(ctx context.Context, t erp.Target, procedures []string, keys bool) (map[string]catalog.Procedure, []catalog.Finding, error) {
	d.describes.Add(1)
	return d.Database.Describe(ctx, t, procedures, keys)
}

// TestHealthChecksAtOnceReadTheDatabaseOnce: a burst of health checks of
// one instance shares one reading, since each instance has at most one in
// flight and a reading serves the health check for a second.
func TestHealthChecksAtOnceReadTheDatabaseOnce(t *testing.T) {
	e := demoEnv(t, gateway.Config{})
	db := &describeCounter{countingDB: e.db}
	h := gateway.New(gateway.Config{}, catalog.Default(), access.Static(e.acc.Document), e.src, db, slog.New(slog.DiscardHandler))
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if r := do(t, h, http.MethodGet, "/demo/health", ""); r.Status != 200 {
				t.Errorf("HTTP %d %s", r.Status, r.Raw)
			}
		})
	}
	wg.Wait()
	if n := db.describes.Load(); n != 1 {
		t.Fatalf("16 health checks at once read the database %d times, want once", n)
	}
}

// TestHealthWarnsOfAPrivilegedUser: a gateway that connects as SYSDBA (or
// the database's owner) is not kept out by a DBA's shutdown, and its
// reconnects can take the one attachment -shut single leaves the DBA: the
// health check warns, and nothing fails.
func TestHealthWarnsOfAPrivilegedUser(t *testing.T) {
	e := newEnv(t, gateway.Config{}, map[string]any{"demo": anonymous(fbtest.Admin(t, fbtest.Demo(t)))})
	spec := gateway.New(gateway.Config{}, catalog.Default(), access.Static(e.acc.Document), e.src, e.db, slog.New(slog.DiscardHandler))
	r := do(t, spec, http.MethodGet, "/demo/health", "")
	if r.Status != 200 || !strings.Contains(r.Raw, `"status":"warnings"`) ||
		!strings.Contains(r.Raw, `{"clave":"USER","fatal":false,"finding":"the gateway connects as SYSDBA: a DBA's shutdown (gfix -shut single or multi) does not keep it out`) {
		t.Fatalf("HTTP %d %s", r.Status, r.Raw)
	}
}
