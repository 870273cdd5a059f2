package gateway_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// FuzzHandler: whatever the method, path, Authorization and body, the
// answer is a JSON refusal or answer with its code, never a panic or a 500.
// The instances' database does not listen, so a request that passes every
// check is answered 503 without the fuzzer writing anywhere: "open" lets
// any request in (anonymous), "demo" wants its token.
func FuzzHandler(f *testing.F) {
	down := fbtest.Demo(f)
	down.Host, down.Port = "127.0.0.1", 1
	e := newEnv(f, gateway.Config{Timeout: 300 * time.Millisecond}, map[string]any{
		"demo": tenants.Instance{Connection: down},
		"open": anonymous(down),
	})
	token := "Bearer " + fbtest.Token(f, e.acc, "demo")
	for _, seed := range []struct{ method, path, auth, body string }{
		{"POST", path("demo", "executequery"), token, `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`},
		{"POST", path("open", "execute"), "", `[{"CLAVE":"Set_Terceros","CODIGO":"X"},{"CLAVE":"Get_Terceros","CODIGO":{"$from":0,"$field":"CODIGO"}}]`},
		{"POST", path("open", "executequery"), "", `{"CLAVE":"Get_Inventario_Precio","FECHA_CORTE_":"31.02.2026","REFERENCIA_":null}`},
		{"GET", "/open/health", "", ""},
		{"PUT", path("demo", "execute"), "Bearer x", "{"},
		{"POST", "/demo/../open/RestServerIsapi.dll/api/v1/TServiceRestInterface/execute", token, `[]`},
	} {
		f.Add(seed.method, seed.path, seed.auth, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, method, target, auth string, body []byte) {
		req, err := http.NewRequest(method, "http://gateway.test"+target, bytes.NewReader(body))
		if err != nil || req.URL.Path == "" || req.URL.Path[0] != '/' {
			return // net/http refuses it before any handler
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		if rec.Code == http.StatusInternalServerError || rec.Code < 200 || rec.Code > 599 {
			t.Fatalf("%s %s: HTTP %d %s", method, target, rec.Code, rec.Body)
		}
		if method == http.MethodHead {
			return
		}
		var answer any
		if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil {
			t.Fatalf("%s %s: HTTP %d, not JSON: %q", method, target, rec.Code, rec.Body)
		}
		if rec.Code != http.StatusOK && !bytes.Contains(rec.Body.Bytes(), []byte(`"cod_error":`)) {
			t.Fatalf("%s %s: HTTP %d without a code: %s", method, target, rec.Code, rec.Body)
		}
	})
}
