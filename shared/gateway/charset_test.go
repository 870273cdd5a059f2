package gateway_test

import (
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
)

// TestAConnectionInAnotherCharset: an instance whose connection is WIN1252
// (a database of character set NONE filled by ANSI clients reads right so)
// writes what WIN1252 holds as it is, and refuses a value it cannot hold as
// Firebird refuses one on a UTF8 connection, writing nothing of it or of
// its batch, where the driver as released wrote it as an empty string.
func TestAConnectionInAnotherCharset(t *testing.T) {
	cfg := fbtest.Demo(t)
	admin := setupKeys(t, cfg)
	cfg.Charset = "WIN1252"
	e := newEnv(t, gateway.Config{}, map[string]any{"demo": anonymous(cfg)})
	run := time.Now().UnixNano() % 1e9
	pago := func(code string) string { return fmt.Sprintf(`{"CLAVE":"Set_Pago","CODIGO":%q,"VALOR":1}`, code) }

	held := fmt.Sprintf("Ñ€%d", run)
	if r := send(t, e.h, "execute", pago(held)); r.status != 200 || !strings.Contains(r.body, `"CODIGO":"`+held+`"`) {
		t.Fatalf("a value WIN1252 holds: %d %s", r.status, r.body)
	}
	if n := payments(t, admin, held); n != 1 {
		t.Fatalf("%d payments of %s, want 1", n, held)
	}

	empty := payments(t, admin, "")
	refused := `"ex_execsql":"[firebirdsql]arithmetic exception, numeric overflow, or string truncation\r\nCannot transliterate character between character sets"`
	if r := send(t, e.h, "execute", pago(fmt.Sprintf("中%d", run))); r.status != 200 || !strings.Contains(r.body, refused) {
		t.Fatalf("a value WIN1252 cannot hold: %d %s", r.status, r.body)
	}
	if n := payments(t, admin, ""); n != empty {
		t.Fatalf("%d payments written with an empty code", n-empty)
	}
	first := fmt.Sprintf("B%d", run)
	r := send(t, e.h, "execute", "["+pago(first)+","+pago(fmt.Sprintf("中B%d", run))+"]")
	if r.status != 200 || len(r.answers) != 2 || r.answers[0]["cod_error"] != float64(erp.CodeRolledBack) {
		t.Fatalf("a batch whose second value WIN1252 cannot hold: %d %s", r.status, r.body)
	}
	if n := payments(t, admin, first); n != 0 {
		t.Fatalf("%d payments of the refused batch's first call", n)
	}
}

// TestNamesInAnotherCharset: a column whose name is not ASCII is answered by
// its name on a WIN1252 connection as on a UTF8 one, alone and in a batch
// (a single call's names came as their WIN1252 bytes, "A\ufffdO", where the
// batch's block answered "AÑO", and a reference to the column found none).
func TestNamesInAnotherCharset(t *testing.T) {
	cfg := fbtest.Demo(t)
	fbtest.Setup(t, cfg,
		`CREATE OR ALTER PROCEDURE REST_TEST_NOMBRES (P_N INTEGER) RETURNS ("AÑO" INTEGER, "Descripción" VARCHAR(20)) AS BEGIN
			"AÑO" = P_N; "Descripción" = 'Ñandú'; SUSPEND;
		END`,
		`GRANT EXECUTE ON PROCEDURE REST_TEST_NOMBRES TO GATEWAY`)
	win := cfg
	win.Charset = "WIN1252"
	e := newEnv(t, gateway.Config{}, map[string]any{"demo": anonymous(cfg), "win": anonymous(win)})
	h := specAnd(t, e, catalog.Operation{Clave: "Get_Nombres", Endpoint: catalog.ExecuteQuery, Procedure: "REST_TEST_NOMBRES",
		Params: []catalog.Param{{Name: "N", Kind: catalog.Integer, Required: true}}})
	one := `{"cod_error":0,"data":[{"AÑO":2024,"Descripción":"Ñandú"}]}`
	for _, c := range []struct{ body, want string }{
		{`{"CLAVE":"Get_Nombres","N":2024}`, one},
		{`[{"CLAVE":"Get_Nombres","N":2024},{"CLAVE":"Get_Nombres","N":{"$from":0,"$field":"AÑO"}}]`, "[" + one + "," + one + "]"},
	} {
		for _, instance := range []string{"demo", "win"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path(instance, "executequery"), strings.NewReader(c.body)))
			if rec.Code != 200 || rec.Body.String() != c.want {
				t.Errorf("%s on %s: HTTP %d %s\nwant %s", c.body, instance, rec.Code, rec.Body, c.want)
			}
		}
	}
}
