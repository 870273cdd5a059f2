package fbtest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/erp-gateway/gateway/shared/erp"
)

// CreateList creates REST_TEST_LISTA(P_N): P_N rows of a price list, row i
// (from 1) with ID i, REFERENCIA 'R' and i zero-padded to 9 digits, and
// about 300 bytes of JSON in all: the big reads of the streaming tests.
func CreateList(t testing.TB, cfg erp.Connection) {
	t.Helper()
	Setup(t, cfg,
		`CREATE OR ALTER PROCEDURE REST_TEST_LISTA (P_N VARCHAR(15)) RETURNS (ID INTEGER, REFERENCIA VARCHAR(20),
			DESCRIPCION VARCHAR(200), PRECIO NUMERIC(18,4), EXISTENCIA INTEGER, FECHA DATE, BODEGA VARCHAR(40))
		AS BEGIN
			ID = 0;
			WHILE (ID < CAST(P_N AS INTEGER)) DO BEGIN
				ID = ID + 1;
				REFERENCIA = 'R' || LPAD(ID, 9, '0');
				DESCRIPCION = 'Artículo de ferretería número ' || ID || ', caja x 12 "surtida" ' || LPAD('', 100, 'x');
				PRECIO = ID * 1.5 + 0.0125;
				EXISTENCIA = MOD(ID, 1000);
				FECHA = DATE '2026-01-01' + MOD(ID, 365);
				BODEGA = 'Bodega principal ' || MOD(ID, 7);
				SUSPEND;
			END
		END`,
		`GRANT EXECUTE ON PROCEDURE REST_TEST_LISTA TO GATEWAY`,
		// REST_TEST_LISTA's rows, then the procedure's refusal: a failure
		// after an answer began to stream.
		`CREATE OR ALTER PROCEDURE REST_TEST_LISTA_FALLA (P_N VARCHAR(15)) RETURNS (ID INTEGER, REFERENCIA VARCHAR(20),
			DESCRIPCION VARCHAR(200), PRECIO NUMERIC(18,4), EXISTENCIA INTEGER, FECHA DATE, BODEGA VARCHAR(40))
		AS BEGIN
			FOR SELECT * FROM REST_TEST_LISTA(:P_N) INTO :ID, :REFERENCIA, :DESCRIPCION, :PRECIO, :EXISTENCIA, :FECHA, :BODEGA DO SUSPEND;
			EXCEPTION REST_ERROR '***LA LISTA ' || P_N || ' NO TERMINA***';
		END`,
		`GRANT EXECUTE ON PROCEDURE REST_TEST_LISTA TO PROCEDURE REST_TEST_LISTA_FALLA`,
		`GRANT USAGE ON EXCEPTION REST_ERROR TO PROCEDURE REST_TEST_LISTA_FALLA`,
		`GRANT EXECUTE ON PROCEDURE REST_TEST_LISTA_FALLA TO GATEWAY`)
}

// CheckList checks a REST_TEST_LISTA answer of n rows, row by row.
func CheckList(t testing.TB, body []byte, n int) {
	t.Helper()
	var answer struct {
		CodError int `json:"cod_error"`
		Data     []struct {
			ID         int         `json:"ID"`
			REFERENCIA string      `json:"REFERENCIA"`
			PRECIO     json.Number `json:"PRECIO"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		t.Fatalf("not JSON: %v (%d bytes)", err, len(body))
	}
	if answer.CodError != 0 || len(answer.Data) != n {
		t.Fatalf("cod_error %d, %d rows, want %d", answer.CodError, len(answer.Data), n)
	}
	for i, row := range answer.Data {
		if row.ID != i+1 || row.REFERENCIA != fmt.Sprintf("R%09d", i+1) {
			t.Fatalf("row %d: %+v", i, row)
		}
	}
}

// ListCatalog is a catalog file serving REST_TEST_LISTA (CreateList) as
// Get_Lista, and as Get_Lista_50000 with that max_rows, for a binary's
// catalog setting (infra/docs/configuration.md#configuration).
func ListCatalog(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "catalog.json")
	op := `"endpoint":"executequery","procedure":"REST_TEST_LISTA","params":[{"name":"N","max_chars":15,"required":true}]`
	doc := `{"operations":[{"clave":"Get_Lista",` + op + `},{"clave":"Get_Lista_50000","max_rows":50000,` + op + `}]}`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
