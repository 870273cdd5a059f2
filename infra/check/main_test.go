package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/idempotency"
	"github.com/erp-gateway/gateway/shared/tenants"
)

const token = "erpgw_demo_3999776004efd43ca5ca39186f4b49f5_mAliZOWh_OsfcW0aZtBc_yS_VorP-s__q7sEhLp-KQX2q8Xr-AnyGe1K1NvIlIvt73BF0Pme7RHr3GzFI4W_Ag"

// server is the demo instance as make run serves it (its token required),
// on the test database, behind edit, which may break the answers.
func server(t *testing.T, cfg gateway.Config, keys bool, edit func([]byte) []byte) string {
	t.Helper()
	demo, err := tenants.LoadFile("../instances.demo.json")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := demo.Lookup(context.Background(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	inst.Connection, inst.Idempotency = fbtest.Demo(t), keys
	cat, err := catalog.LoadFile("../catalog.demo.json")
	if err != nil {
		t.Fatal(err)
	}
	pools := firebird.NewPools(firebird.Options{})
	t.Cleanup(func() { pools.Close() })
	h := gateway.New(cfg, cat, fbtest.DemoAccess(t, "../.."), single{inst}, idempotency.New(pools, 0), slog.New(slog.DiscardHandler))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if edit != nil {
			body = edit(body)
		}
		for k, v := range rec.Header() {
			if k != "Content-Length" {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(rec.Code)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// single serves one instance, named demo.
type single struct{ inst tenants.Instance }

func (s single) Lookup(_ context.Context, name string) (tenants.Instance, error) {
	if name != "demo" {
		return tenants.Instance{}, tenants.ErrUnknown
	}
	return s.inst, nil
}

func check(t *testing.T, base string, write string) (int, string) {
	t.Helper()
	c := config{base: base, instance: "demo", token: token, class: "TServiceRestInterface", openapi: "../openapi.json", write: write,
		found: []string{
			`{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`,
			`{"CLAVE":"Get_Inventario_Precio","FECHA_CORTE_":"22.11.2026","REFERENCIA_":"REF0003"}`,
			`{"CLAVE":"Get_Gestion_Primario","TIPO":"FV","PREFIJO":"FE","NUMERO":"1000"}`,
		},
		missing: []string{`{"CLAVE":"Get_Terceros","CODIGO":"NADIE"}`},
	}
	var out bytes.Buffer
	failed, err := run(context.Background(), c, http.DefaultClient, &out)
	if err != nil {
		t.Fatal(err)
	}
	return failed, out.String()
}

func TestCheckPassesAgainstTheGateway(t *testing.T) {
	fbtest.KeyTable(t, fbtest.Demo(t))
	for _, tt := range []struct {
		cfg  gateway.Config
		keys bool // the instance keeps idempotency keys: the write replays
	}{{gateway.Config{}, false}, {gateway.Config{ErrorPrefix: "[FireDAC][Phys][FB]"}, true}} {
		write := fmt.Sprintf("C%d", time.Now().UnixNano()%1e13)
		failed, out := check(t, server(t, tt.cfg, tt.keys, nil), write)
		replayed := strings.Contains(out, "PASS  Set_Terceros: the same request with its Idempotency-Key replays the answer")
		if failed != 0 || strings.Count(out, "PASS") < 17 || replayed != tt.keys {
			t.Fatalf("prefix %q, keys %v: %d failed:\n%s", tt.cfg.ErrorPrefix, tt.keys, failed, out)
		}
		t.Logf("prefix %q, keys %v:\n%s", tt.cfg.ErrorPrefix, tt.keys, out)
	}
}

func TestCheckFailsAgainstABrokenGateway(t *testing.T) {
	trailingZeros := regexp.MustCompile(`(\.\d*?[1-9])0+([,}\]])|\.0+([,}\]])`)
	tests := []struct {
		name       string
		edit       func([]byte) []byte
		line, says string
	}{
		{"keys out of order", func(b []byte) []byte {
			return bytes.ReplaceAll(b, []byte(`{"CODIGO":"REF0001","CODIGO2":null,`), []byte(`{"CODIGO2":null,"CODIGO":"REF0001",`))
		}, "FAIL  Get_Referencias: columns in the procedure's order", "row 1 has keys CODIGO2,CODIGO,NOMBRE,NOMBRE2,…; the procedure's order is CODIGO,CODIGO2,NOMBRE,NOMBRE2,…"},
		{"decimals rounded through a float", func(b []byte) []byte {
			return trailingZeros.ReplaceAll(b, []byte("$1$2$3"))
		}, "FAIL  Get_Inventario_Precio: NUMERIC columns keep their scale", "row 1: EXISTENCIA is 208.09, written with 2 decimals; NUMERIC(15,4) has 4 (rounded through a float?)"},
		{"lines joined without CR", func(b []byte) []byte {
			return bytes.ReplaceAll(b, []byte(`\r\n`), []byte(`\n`))
		}, "FAIL  Get_Terceros: not found answers the database's four lines", "ex_execsql has 1 lines separated by CR LF, want 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			failed, out := check(t, server(t, gateway.Config{}, false, tt.edit), "")
			for line := range strings.SplitSeq(out, "\n") {
				if strings.HasPrefix(line, tt.line) && strings.Contains(line, tt.says) {
					return
				}
			}
			t.Fatalf("%d failed; want a line %q saying %q in:\n%s", failed, tt.line, tt.says, out)
		})
	}
}

func TestRequestBody(t *testing.T) {
	tests := map[string]string{
		`{"CLAVE":"Get_X","A":"1"}`:             `{"CLAVE":"Get_X","A":"1"}`,
		`Get_Terceros:CODIGO=NADIE`:             `{"CLAVE":"Get_Terceros","CODIGO":"NADIE"}`,
		`Get_Gestion_Primario:TIPO=FV,NUMERO=1`: `{"CLAVE":"Get_Gestion_Primario","NUMERO":"1","TIPO":"FV"}`,
	}
	for in, want := range tests {
		if got, err := requestBody(in); err != nil || got != want {
			t.Errorf("%s: got %s (%v), want %s", in, got, err, want)
		}
	}
	if _, err := requestBody("Get_X"); err == nil {
		t.Error("accepted a CLAVE without fields")
	}
}

// TestNotAnOpenAPIDocument: a file that is JSON but no OpenAPI document is
// refused with a sentence, where the check panicked on {} and [].
func TestNotAnOpenAPIDocument(t *testing.T) {
	for _, doc := range []string{`{}`, `[]`, `"x"`, `{"openapi":"3.1.0","components":[]}`} {
		file := t.TempDir() + "/openapi.json"
		if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		_, err := run(context.Background(), config{openapi: file, base: "http://127.0.0.1:1"}, http.DefaultClient, &out)
		if doc != `{"openapi":"3.1.0","components":[]}` && (err == nil || !strings.Contains(err.Error(), "not an OpenAPI document")) {
			t.Errorf("%s: %v", doc, err)
		}
	}
}
