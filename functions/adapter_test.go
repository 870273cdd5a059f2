// Package functions_test runs both Lambda functions the way AWS would: API
// Gateway REST events through each function's handler, the real bootstrap
// binaries against an emulated Lambda Runtime API, and template.yaml held to
// what the handler serves.
package functions_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/lambdafn"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// inline is GATEWAY_INSTANCES_JSON for the test databases, with a
// GATEWAY_ACCESS_JSON that lets every one of them in without a token.
func inline(t testing.TB, extra map[string]erp.Connection) map[string]string {
	t.Helper()
	all := map[string]tenants.Instance{"demo": {Connection: fbtest.Demo(t)}}
	names := []string{"demo"}
	for k, v := range extra {
		all[k] = tenants.Instance{Connection: v}
		names = append(names, k)
	}
	b, err := json.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	_, acc := fbtest.Access(t, names...)
	return map[string]string{"GATEWAY_INSTANCES_JSON": string(b), "GATEWAY_ACCESS_JSON": string(acc)}
}

// environ is env as a process environment.
func environ(env map[string]string) []string {
	var out []string
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

func newFunction(t testing.TB, endpoint catalog.Endpoint, env map[string]string) *lambdafn.Function {
	t.Helper()
	return newFunctionWith(t, endpoint, "", env)
}

// newFunctionWith is newFunction with a catalog built in (base64 of its
// JSON), as make build CATALOG=file writes it.
func newFunctionWith(t testing.TB, endpoint catalog.Endpoint, builtCatalog string, env map[string]string) *lambdafn.Function {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	fn, err := lambdafn.New(context.Background(), endpoint, builtCatalog, fbtest.Settings(t, env), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fn.Close() })
	return fn
}

// restEvent is a recorded API Gateway REST proxy event, adjusted.
func restEvent(t testing.TB, path, body string, edit func(*events.APIGatewayProxyRequest)) events.APIGatewayProxyRequest {
	t.Helper()
	raw, err := os.ReadFile("testdata/rest-event.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev events.APIGatewayProxyRequest
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	ev.Path = path
	ev.RequestContext.Path = "/prod" + path
	ev.Body = body
	// API Gateway matched {instance} on the segment before
	// RestServerIsapi.dll, and hands it over decoded.
	if segs := strings.Split(path, "/"); len(segs) >= 6 {
		instance, err := url.PathUnescape(segs[len(segs)-6])
		if err != nil {
			instance = segs[len(segs)-6]
		}
		ev.PathParameters = map[string]string{"instance": instance, "class": segs[len(segs)-2]}
	}
	if edit != nil {
		edit(&ev)
	}
	return ev
}

const apiPath = "/demo/RestServerIsapi.dll/api/v1/TServiceRestInterface/"

func TestFunctionsServeAPIGatewayEvents(t *testing.T) {
	frozen := frozenListener(t)
	frozenCfg := fbtest.Demo(t)
	frozenCfg.Port = frozen
	env := inline(t, map[string]erp.Connection{"frozen": frozenCfg})
	query := newFunction(t, catalog.ExecuteQuery, env)
	exec := newFunction(t, catalog.Execute, env)
	code := fmt.Sprintf("L%d", time.Now().UnixNano()%1e14)

	tests := []struct {
		name     string
		fn       *lambdafn.Function
		event    events.APIGatewayProxyRequest
		deadline time.Duration
		status   int
		contains string
	}{
		{"read", query, restEvent(t, apiPath+"executequery", `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`, nil),
			0, 200, `{"cod_error":0,"data":[{"CODIGO":"REF0001",`},
		{"base64 body", query, restEvent(t, apiPath+"executequery", base64.StdEncoding.EncodeToString([]byte(`{"CLAVE":"Get_Terceros","CODIGO":"10104729"}`)),
			func(e *events.APIGatewayProxyRequest) { e.IsBase64Encoded = true }), 0, 200, `"NOMBRE":"María José Gómez Ávila"`},
		{"custom-domain base path", query, restEvent(t, "/erp"+apiPath+"executequery", `{"CLAVE":"Get_Referencias","CODIGO":"REF0002"}`, nil),
			0, 200, `"CODIGO":"REF0002"`},
		{"not found keeps 200", query, restEvent(t, apiPath+"executequery", `{"CLAVE":"Get_Referencias","CODIGO":"NADA"}`, nil),
			0, 200, `"ex_execsql":"[firebirdsql]exception 16\r\nREST_ERROR\r\n***LA REFERENCIA NADA NO EXISTE***`},
		{"write", exec, restEvent(t, apiPath+"execute", `{"CLAVE":"Set_Terceros","CODIGO":"`+code+`","DV":"1","NATURALEZA":"J","EMPRESA":"Lambda S.A.S.","RAZON_COMERCIAL":"Lambda","DIRECCION":"Calle 1","CODIDENTIDAD":"NIT","CODSOCIEDAD":"SAS","CODPAIS":"CO","CODMUNICIPIO":"05001"}`, nil),
			0, 200, `"NOMBRE":"Lambda S.A.S."`},
		{"each function serves only its endpoint", exec, restEvent(t, apiPath+"executequery", `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`, nil),
			0, 404, `"cod_error":1101`},
		{"a read CLAVE on the write function", exec, restEvent(t, apiPath+"execute", `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`, nil),
			0, 400, `"cod_error":1005`},
		{"body that is not base64", query, restEvent(t, apiPath+"executequery", `{not base64}`,
			func(e *events.APIGatewayProxyRequest) { e.IsBase64Encoded = true }), 0, 400, `"cod_error":1001`},
		{"path net/url refuses", query, restEvent(t, "/de%zz/RestServerIsapi.dll/api/v1/TServiceRestInterface/executequery", `{}`, nil),
			0, 400, `"cod_error":`},
		{"percent-encoded instance segment", query, restEvent(t, "/x%2Fdemo/RestServerIsapi.dll/api/v1/TServiceRestInterface/executequery", `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`, nil),
			0, 400, `"cod_error":1103`},
		{"pathParameters name another instance than the path", query, restEvent(t, apiPath+"executequery", `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`,
			func(e *events.APIGatewayProxyRequest) { e.PathParameters["instance"] = "otra" }), 0, 400, `"cod_error":1103`},
		{"two Authorization headers", query, restEvent(t, apiPath+"executequery", `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`,
			func(e *events.APIGatewayProxyRequest) {
				e.MultiValueHeaders["Authorization"] = []string{"Bearer a", "Bearer b"}
				e.Headers["Authorization"] = "Bearer b"
			}), 0, 401, `"cod_error":1105`},
		{"Lambda deadline bounds the database call", query, restEvent(t, strings.Replace(apiPath, "demo", "frozen", 1)+"executequery", `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`, nil),
			400 * time.Millisecond, 503, `"cod_error":1201`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.deadline)
				defer cancel()
			}
			start := time.Now()
			resp, err := tt.fn.Handle(ctx, tt.event)
			if err != nil {
				t.Fatalf("handler error: %v", err)
			}
			if resp.StatusCode != tt.status || !strings.Contains(resp.Body, tt.contains) {
				t.Fatalf("got %d %s\nwant %d and %s", resp.StatusCode, resp.Body, tt.status, tt.contains)
			}
			if ct := resp.MultiValueHeaders["Content-Type"]; len(ct) != 1 || ct[0] != "application/json; charset=utf-8" {
				t.Fatalf("Content-Type %v (headers %v)", ct, resp.MultiValueHeaders)
			}
			if resp.IsBase64Encoded {
				t.Fatal("JSON answered base64-encoded")
			}
			if tt.deadline > 0 && time.Since(start) > tt.deadline+time.Second {
				t.Fatalf("took %s with a %s deadline", time.Since(start), tt.deadline)
			}
		})
	}
}

// frozenListener accepts connections and never answers, like a hung server.
func frozenListener(t testing.TB) int {
	t.Helper()
	ln, err := fbtest.Hang()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}
