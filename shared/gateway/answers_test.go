package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/record"
)

func TestAnswersBeyondTheirLimitsAreRefused(t *testing.T) {
	setupRows(t, fbtest.Demo(t))
	e := demoEnv(t, gateway.Config{})
	admin := fbtest.Open(t, fbtest.Admin(t, fbtest.Demo(t)))
	read := func(clave string, n int) response {
		return e.post(t, path("demo", "executequery"), fmt.Sprintf(`{"CLAVE":%q,"N":"%d"}`, clave, n))
	}
	// 400 rows are 3.2 MB of JSON text, but 6.4 MB written as the JSON
	// string Lambda returns; 250 rows are 4 MB that way.
	tests := []struct {
		name   string
		clave  string
		n      int
		status int
		code   int
		rows   int
		text   string
	}{
		{"at the row limit", "Get_Filas_100", 100, 200, 0, 100, ""},
		{"one row over it", "Get_Filas_100", 101, 422, 1301, 0, "the answer of CLAVE Get_Filas_100 has more than 100 rows, its limit; ask for fewer (narrow the parameters)"},
		{"under Lambda's limit", "Get_Filas", 250, 200, 0, 250, ""},
		{"over Lambda's limit as Lambda counts", "Get_Filas", 400, 422, 1302, 0, fmt.Sprintf("the answer of CLAVE Get_Filas would pass %d bytes, the most this service can return; ask for fewer rows (narrow the parameters)", gateway.DefaultMaxAnswer)},
	}
	attachment := func() any {
		r := read("Get_Filas_100", 1)
		if r.Status != 200 || len(r.Body.Data) != 1 {
			t.Fatalf("HTTP %d %.300s", r.Status, r.Raw)
		}
		return r.Body.Data[0]["CONEXION"]
	}
	before := attachment()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := read(tt.clave, tt.n)
			if r.Status != tt.status || *r.Body.CodError != tt.code || len(r.Body.Data) != tt.rows {
				t.Fatalf("HTTP %d, cod_error %d, %d rows; want %d, %d, %d rows: %.300s", r.Status, *r.Body.CodError, len(r.Body.Data), tt.status, tt.code, tt.rows, r.Raw)
			}
			if tt.text != "" && (r.Body.ExExecSQL == nil || *r.Body.ExExecSQL != tt.text) {
				t.Fatalf("ex_execsql %q, want %q", *r.Body.ExExecSQL, tt.text)
			}
			if size := record.StringSize([]byte(r.Raw)); size > gateway.DefaultMaxAnswer {
				t.Fatalf("an answer of %d bytes as a JSON string was sent", size)
			}
		})
	}

	t.Run("a batch over Lambda's limit as Lambda counts", func(t *testing.T) {
		// Each call fits alone, and the batch's text too (4 MB), but not
		// the JSON string Lambda returns (8 MB).
		r := e.post(t, path("demo", "executequery"), `[{"CLAVE":"Get_Filas","N":"250"},{"CLAVE":"Get_Filas","N":"250"}]`)
		if r.Status != 422 || !strings.Contains(r.Raw, `"cod_error":1302`) {
			t.Fatalf("HTTP %d %.300s", r.Status, r.Raw)
		}
	})

	// The refusals stopped the fetch on a connection still in step: it
	// serves on, its statements prepared.
	if after := attachment(); after != before {
		t.Fatalf("served on attachment %v after the refusals, %v before: the connection was dropped", after, before)
	}

	t.Run("a write whose answer is too large writes nothing", func(t *testing.T) {
		body := `{"CLAVE":"Set_Terceros_Answer_Too_Large","CODIGO":"400","DV":"1","NATURALEZA":"N","RAZON_COMERCIAL":"x","DIRECCION":"x","CODIDENTIDAD":"CC","CODSOCIEDAD":"PN","CODPAIS":"CO","CODMUNICIPIO":"05001"}`
		r := e.post(t, path("demo", "execute"), body)
		if r.Status != 422 || *r.Body.CodError != 1302 || !strings.Contains(*r.Body.ExExecSQL, "; nothing was written;") {
			t.Fatalf("HTTP %d %.300s", r.Status, r.Raw)
		}
		if n := count(t, admin, `SELECT COUNT(*) FROM TERCEROS WHERE CODIGO = '400'`); n != 0 {
			t.Fatalf("the write was committed: %d rows", n)
		}
	})
}

// TestExceptionRaisedUsingArguments: ex_execsql holds the message as the
// client library formats it (isql, the vendor's client), never the raw
// arguments the status vector also carries.
func TestExceptionRaisedUsingArguments(t *testing.T) {
	cfg := fbtest.Demo(t)
	admin := fbtest.Open(t, fbtest.Admin(t, cfg))
	for _, stmt := range []string{
		`CREATE OR ALTER EXCEPTION E_TEST_PAGO 'El pago @1 ya existe (fecha @2)'`,
		`CREATE OR ALTER PROCEDURE REST_TEST_PAGO (P_N VARCHAR(15)) RETURNS (N VARCHAR(15)) AS BEGIN
			IF (P_N = 'using') THEN EXCEPTION E_TEST_PAGO USING ('1001', '2024-02-29');
			IF (P_N = 'text') THEN EXCEPTION E_TEST_PAGO 'línea 1' || ASCII_CHAR(10) || 'línea 2';
			IF (P_N = 'plain') THEN EXCEPTION E_TEST_PAGO;
			N = P_N;
			SUSPEND;
		END`,
		`GRANT USAGE ON EXCEPTION E_TEST_PAGO TO PROCEDURE REST_TEST_PAGO`,
		`GRANT EXECUTE ON PROCEDURE REST_TEST_PAGO TO GATEWAY`,
	} {
		if _, err := admin.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	var number int
	if err := admin.QueryRow(`SELECT RDB$EXCEPTION_NUMBER FROM RDB$EXCEPTIONS WHERE RDB$EXCEPTION_NAME = 'E_TEST_PAGO'`).Scan(&number); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, gateway.Config{}, map[string]any{"demo": anonymous(cfg)})
	tests := map[string]string{
		"using": "El pago 1001 ya existe (fecha 2024-02-29)",
		"text":  "línea 1\nlínea 2",
		"plain": "El pago @1 ya existe (fecha @2)",
	}
	for arg, message := range tests {
		t.Run(arg, func(t *testing.T) {
			r := e.post(t, path("demo", "executequery"), `{"CLAVE":"Get_Pago","N":"`+arg+`"}`)
			want := fmt.Sprintf("[firebirdsql]exception %d\r\nE_TEST_PAGO\r\n%s\r\nAt procedure 'REST_TEST_PAGO' line: ", number, message)
			if r.Status != 200 || r.Body.ExExecSQL == nil || !strings.HasPrefix(*r.Body.ExExecSQL, want) {
				t.Fatalf("HTTP %d %s; want ex_execsql starting %q", r.Status, r.Raw, want)
			}
		})
	}
}
