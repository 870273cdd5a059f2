package gateway_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/access"
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/idempotency"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// dialect1Operations is a catalog of the legacy ERP in SQL dialect 1
// (infra/sql/dialect1.sql), its inputs drafted as make catalog-from-db
// drafts them.
func dialect1Operations() []catalog.Operation {
	numero := catalog.Param{Name: "P_NUMERO", Kind: catalog.Integer, Bits: 32, Required: true}
	return []catalog.Operation{
		{Clave: "Get_Cliente", Endpoint: catalog.ExecuteQuery, Procedure: "REST_SELECT_CLIENTE",
			Params: []catalog.Param{{Name: "P_CODIGO", MaxLen: 15, Required: true}}},
		{Clave: "Set_Pedido", Endpoint: catalog.Execute, Procedure: "REST_INSERT_PEDIDO",
			Params: []catalog.Param{{Name: "P_CLIENTE", MaxLen: 15, Required: true}, {Name: "P_FECHA", Kind: catalog.Date}}},
		{Clave: "Set_Linea", Endpoint: catalog.Execute, Procedure: "REST_INSERT_PEDIDO_LINEA",
			Params: []catalog.Param{numero, {Name: "P_CANTIDAD", Kind: catalog.Decimal, Precision: 15, Scale: 4, Required: true},
				{Name: "P_PRECIO", Kind: catalog.Decimal, Precision: 15, Scale: 2, Required: true}}},
		{Clave: "Set_Pago", Endpoint: catalog.Execute, Procedure: "REST_INSERT_PAGO",
			Params: []catalog.Param{numero, {Name: "P_VALOR", Kind: catalog.Decimal, Precision: 15, Scale: 2, Required: true}}},
	}
}

// numbers decodes an answer keeping each number's text.
func numbers(t testing.TB, body string) []map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var single struct {
		Data []map[string]any `json:"data"`
	}
	if strings.HasPrefix(body, "[") {
		var batch []struct {
			Data []map[string]any `json:"data"`
		}
		if err := dec.Decode(&batch); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		var firsts []map[string]any
		for _, b := range batch {
			if len(b.Data) == 0 {
				t.Fatalf("a call answered no row: %s", body)
			}
			firsts = append(firsts, b.Data[0])
		}
		return firsts
	}
	if err := dec.Decode(&single); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return single.Data
}

// TestADialect1Database: a database begun under InterBase, still in SQL
// dialect 1, keeps a NUMERIC or DECIMAL of more than 9 digits as a double
// with a scale, and refuses the word BIGINT in any statement. Its numbers
// are answered as the database writes them (its CAST to text, isql), not
// as the shortest float (411522.62999999995 for 411522.63); a document
// passes a line's amount on to a NUMERIC(15,2) parameter; a keyed write
// answers again byte for byte; the health check takes a decimal for such
// a double and a date for a TIMESTAMP; the sweep of expired keys and the hunt for
// orphaned attachments, whose statements declared BIGINTs, run.
func TestADialect1Database(t *testing.T) {
	cfg := fbtest.Dialect1(t)
	admin := fbtest.Open(t, fbtest.Admin(t, cfg))
	e := newEnvOpts(t, gateway.Config{}, firebird.Options{StmtMaxAge: time.Second},
		map[string]any{"demo": tenants.Instance{Connection: cfg, Idempotency: true}}, time.Nanosecond)
	cat, err := catalog.New(dialect1Operations())
	if err != nil {
		t.Fatal(err)
	}
	h := gateway.New(gateway.Config{KeyTTL: time.Hour}, cat, access.Static(e.acc.Document), e.src, e.db, slog.New(slog.NewTextHandler(&lockedWriter{w: e.log}, nil)))
	auth := []string{"Authorization", "Bearer " + fbtest.Token(t, e.acc, "demo")}
	run := time.Now().UnixNano() % 1e9

	t.Run("numbers at their scale", func(t *testing.T) {
		for _, code := range []string{"C001", "C002", "C004"} {
			s := send(t, h, "executequery", fmt.Sprintf(`{"CLAVE":"Get_Cliente","P_CODIGO":%q}`, code), auth...)
			if s.status != http.StatusOK {
				t.Fatalf("%s: %d %s", code, s.status, s.body)
			}
			got := numbers(t, s.body)[0]
			cols := []string{"CUPO", "DESCUENTO", "CUPO_TERCIO", "FRACCION"}
			want := make([]string, len(cols))
			ptrs := make([]any, len(cols))
			for i := range want {
				ptrs[i] = &want[i]
			}
			if err := admin.QueryRow(`SELECT CAST(CUPO AS VARCHAR(30)), CAST(DESCUENTO AS VARCHAR(30)), CAST(CUPO_TERCIO AS VARCHAR(30)),
				CAST(FRACCION AS VARCHAR(30)) FROM REST_SELECT_CLIENTE(?)`, code).Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i, col := range cols {
				if n, ok := got[col].(json.Number); !ok || n.String() != want[i] {
					t.Errorf("%s: %s answered %v, the database writes %s", code, col, got[col], want[i])
				}
			}
		}
		s := send(t, h, "executequery", `{"CLAVE":"Get_Cliente","P_CODIGO":"C001"}`, auth...)
		if !strings.Contains(s.body, `"CUPO_TERCIO":411522.63,"FRACCION":0.3000`) || !strings.Contains(s.body, `"ALTA":"2024-03-15T00:00:00"`) {
			t.Errorf("C001: %s", s.body)
		}
	})

	t.Run("the health check holds the catalog to it", func(t *testing.T) {
		req := httptest.NewRequest(http.MethodGet, "/demo/health", nil)
		req.Header.Set(auth[0], auth[1])
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || rec.Body.String() != `{"cod_error":0,"status":"ok"}` {
			t.Errorf("%d %s", rec.Code, rec.Body.String())
		}
	})

	t.Run("a document as one statement", func(t *testing.T) {
		// The line takes the order's NUMERO, an INTEGER: the block passes
		// it, and answers the line's amount from its own row.
		doc := `[{"CLAVE":"Set_Pedido","P_CLIENTE":"C001","P_FECHA":"24.11.2026"},` +
			`{"CLAVE":"Set_Linea","P_NUMERO":{"$from":0,"$field":"NUMERO"},"P_CANTIDAD":"1.1","P_PRECIO":"45.43"}]`
		for range 2 { // the second on a connection that prepared the block
			s := send(t, h, "execute", doc, auth...)
			if s.status != http.StatusOK || numbers(t, s.body)[1]["IMPORTE"] != json.Number("49.97") {
				t.Fatalf("%d %s", s.status, s.body)
			}
		}
	})

	t.Run("a document passes a line's amount on", func(t *testing.T) {
		ref := func(call int, field string) string { return fmt.Sprintf(`{"$from":%d,"$field":%q}`, call, field) }
		doc := `[{"CLAVE":"Set_Pedido","P_CLIENTE":"C001","P_FECHA":"24.11.2026"},` +
			`{"CLAVE":"Set_Linea","P_NUMERO":` + ref(0, "NUMERO") + `,"P_CANTIDAD":"1.1","P_PRECIO":"45.43"},` +
			`{"CLAVE":"Set_Pago","P_NUMERO":` + ref(0, "NUMERO") + `,"P_VALOR":` + ref(1, "IMPORTE") + `}]`
		s := send(t, h, "execute", doc, auth...)
		if s.status != http.StatusOK {
			t.Fatalf("%d %s", s.status, s.body)
		}
		got := numbers(t, s.body)
		if got[1]["IMPORTE"] != json.Number("49.97") || got[2]["VALOR"] != json.Number("49.97") {
			t.Errorf("the line's amount and the payment: %s", s.body)
		}
		var total string
		if err := admin.QueryRow(`SELECT CAST(TOTAL AS VARCHAR(30)) FROM PEDIDOS WHERE NUMERO = ?`, got[0]["NUMERO"].(json.Number).String()).Scan(&total); err != nil {
			t.Fatal(err)
		}
		// 49.973 was kept for the line (a double keeps what it is given)
		// and 49.97 paid: 0.003 left, answered at the column's scale.
		if total != "0.00" {
			t.Errorf("the order's total after its payment: %s", total)
		}
	})

	t.Run("a keyed write answers again byte for byte", func(t *testing.T) {
		s := send(t, h, "execute", `{"CLAVE":"Set_Pedido","P_CLIENTE":"C002","P_FECHA":"01.02.2026"}`, auth...)
		if s.status != http.StatusOK {
			t.Fatalf("%d %s", s.status, s.body)
		}
		line := fmt.Sprintf(`{"CLAVE":"Set_Linea","P_NUMERO":%s,"P_CANTIDAD":"3","P_PRECIO":"0.1"}`, numbers(t, s.body)[0]["NUMERO"])
		key := fmt.Sprintf("d1-%d", run)
		first := postKeyed(t, h, auth[1][len("Bearer "):], key, line)
		again := postKeyed(t, h, auth[1][len("Bearer "):], key, line)
		if first.status != http.StatusOK || !strings.Contains(first.body, `"IMPORTE":0.30}`) || again.replayed != "true" || again.body != first.body {
			t.Errorf("first %+v, again %+v", first, again)
		}
	})

	t.Run("expired keys are swept", func(t *testing.T) {
		scope := fmt.Sprintf("D1%d", run)
		if _, err := admin.Exec(`INSERT INTO `+idempotency.KeyTable+` (SCOPE, IDEM_KEY, CLAVE, REQUEST_HASH, CREATED_AT) VALUES (?, 'old', 'Set_Pedido', 'h', ?)`,
			scope, time.Now().UTC().Add(-2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		left := func() int {
			return count(t, admin, `SELECT COUNT(*) FROM `+idempotency.KeyTable+` WHERE SCOPE = ?`, scope)
		}
		for i := 0; left() > 0; i++ {
			if i == 20 {
				t.Fatalf("the expired key is still there after %d keyed writes", i)
			}
			if r := postKeyed(t, h, auth[1][len("Bearer "):], fmt.Sprintf("d1-sweep-%d-%d", run, i), `{"CLAVE":"Set_Pedido","P_CLIENTE":"C003"}`); r.status != http.StatusOK {
				t.Fatalf("%+v", r)
			}
		}
	})

	t.Run("an orphan is cancelled", func(t *testing.T) {
		orphan := orphanOf(t, cfg, "SELECT 1 FROM RDB$DATABASE")
		began := time.Now()
		for attached(t, admin, orphan) {
			if time.Since(began) > 10*time.Second {
				t.Fatalf("the orphan %d is still attached %s later:\n%s", orphan, time.Since(began), e.log.String())
			}
			if s := send(t, h, "execute", `{"CLAVE":"Set_Pedido","P_CLIENTE":"C003"}`, auth...); s.status != http.StatusOK {
				t.Fatalf("a write: %d %s", s.status, s.body)
			}
			time.Sleep(500 * time.Millisecond)
		}
	})
}
