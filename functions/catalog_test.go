package functions_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/erp-gateway/gateway/shared/fbtest"
)

// demoCatalog adds Get_Inventario_Precio (a date parameter, an optional
// reference, every reference in one answer) and Set_Precio (a write with a
// date and a decimal) to the specification's operations, as data.
const demoCatalog = "../infra/catalog.demo.json"

// lambdaResponseLimit is the most a synchronous invocation may return.
const lambdaResponseLimit = 6 << 20

type answer struct {
	CodError int               `json:"cod_error"`
	Data     []json.RawMessage `json:"data"`
	Ex       string            `json:"ex_execsql"`
}

func decodeAnswer(t testing.TB, resp events.APIGatewayProxyResponse) answer {
	t.Helper()
	var a answer
	if err := json.Unmarshal([]byte(resp.Body), &a); err != nil {
		t.Fatalf("HTTP %d, body is not JSON: %.300s", resp.StatusCode, resp.Body)
	}
	return a
}

func TestCatalogBuiltIntoTheBinaryServesNewOperations(t *testing.T) {
	instances := environ(inline(t, nil))
	api, srv := newRuntimeAPI(t)
	_, cmd := startBootstrapCmd(t, buildBootstrapWith(t, "executequery", demoCatalog), strings.TrimPrefix(srv.URL, "http://"), instances...)

	// The Laravel client's request, word for word, against every reference.
	began := time.Now()
	resp, res := api.invoke(restEvent(t, apiPath+"executequery", `{"CLAVE":"Get_Inventario_Precio","FECHA_CORTE_":"22.11.2026","REFERENCIA_":""}`, nil))
	took := time.Since(began)
	a := decodeAnswer(t, resp)
	if res.isError || resp.StatusCode != 200 || a.CodError != 0 || len(a.Data) != 20000 {
		t.Fatalf("bulk read: HTTP %d, cod_error %d, %d rows, ex_execsql %q", resp.StatusCode, a.CodError, len(a.Data), a.Ex)
	}
	if len(res.body) > lambdaResponseLimit {
		t.Fatalf("the invocation response is %d bytes, over Lambda's %d", len(res.body), lambdaResponseLimit)
	}
	t.Logf("20,000-row Get_Inventario_Precio under the runtime emulator: %s, body %d bytes, invocation response %d bytes, peak RSS of the function %s",
		took.Round(time.Millisecond), len(resp.Body), len(res.body), fbtest.PeakRSS(t, cmd.Process.Pid))

	tests := []struct {
		name, body string
		status     int
		want       string
	}{
		{"price before the July change", `{"CLAVE":"Get_Inventario_Precio","FECHA_CORTE_":"30.06.2026","REFERENCIA_":"REF0003"}`, 200, `"PRECIO":87013.9700,"FECHA_PRECIO":"2026-01-01"`},
		{"price after the July change", `{"CLAVE":"Get_Inventario_Precio","FECHA_CORTE_":"01.07.2026","REFERENCIA_":"REF0003"}`, 200, `"FECHA_PRECIO":"2026-07-01"`},
		{"no price yet", `{"CLAVE":"Get_Inventario_Precio","FECHA_CORTE_":"31.12.2025","REFERENCIA_":"REF0003"}`, 200, `"PRECIO":null,"FECHA_PRECIO":null`},
		{"NA is every reference too", `{"CLAVE":"Get_Inventario_Precio","FECHA_CORTE_":"22.11.2026","REFERENCIA_":"NA"}`, 200, `"CODIGO":"INV20000"`},
		{"unknown reference", `{"CLAVE":"Get_Inventario_Precio","FECHA_CORTE_":"22.11.2026","REFERENCIA_":"NO-EXISTE"}`, 200, `***LA REFERENCIA NO-EXISTE NO EXISTE***`},
		{"date in another format", `{"CLAVE":"Get_Inventario_Precio","FECHA_CORTE_":"2026-11-22","REFERENCIA_":""}`, 400, `"cod_error":1011,"ex_execsql":"FECHA_CORTE_ must be a date written DD.MM.YYYY, e.g. 22.11.2026"`},
		{"no such day", `{"CLAVE":"Get_Inventario_Precio","FECHA_CORTE_":"31.02.2026"}`, 400, `"cod_error":1011`},
		{"the date is required", `{"CLAVE":"Get_Inventario_Precio","FECHA_CORTE_":"NA"}`, 400, `"cod_error":1006`},
		{"the specification's operations still", `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`, 200, `{"cod_error":0,"data":[{"CODIGO":"REF0001",`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, _ := api.invoke(restEvent(t, apiPath+"executequery", tt.body, nil))
			if resp.StatusCode != tt.status || !strings.Contains(resp.Body, tt.want) {
				t.Fatalf("HTTP %d %.400s\nwant HTTP %d with %s", resp.StatusCode, resp.Body, tt.status, tt.want)
			}
		})
	}
}

func TestCatalogFileServesAWrite(t *testing.T) {
	instances := environ(inline(t, nil))
	api, srv := newRuntimeAPI(t)
	startBootstrap(t, buildBootstrap(t, "execute"), strings.TrimPrefix(srv.URL, "http://"), append(instances, "GATEWAY_CATALOG="+demoCatalog)...)

	// A date of its own, so that no other test's price is touched.
	day := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, int(time.Now().UnixNano()%3000))
	date := day.Format("02.01.2006")
	set := func(price string) events.APIGatewayProxyResponse {
		return api.invoke2(t, apiPath+"execute", `{"CLAVE":"Set_Precio","REFERENCIA_":"INV19999","FECHA_":"`+date+`","PRECIO_":`+price+`}`)
	}
	resp := set(`"1234.5678"`)
	want := `"CODIGO":"INV19999","NOMBRE":"Artículo de inventario 19999","CODLINEA":"INV","CODMEDIDA":"UND","EXISTENCIA":`
	if resp.StatusCode != 200 || !strings.Contains(resp.Body, want) || !strings.Contains(resp.Body, `"PRECIO":1234.5678,"FECHA_PRECIO":"`+day.Format("2006-01-02")+`"`) {
		t.Fatalf("Set_Precio: HTTP %d %s", resp.StatusCode, resp.Body)
	}
	// A JSON number is taken as written; the same day's price is replaced.
	if resp := set(`99999999999999.9999`); resp.StatusCode != 200 || !strings.Contains(resp.Body, `"PRECIO":99999999999999.9999`) {
		t.Fatalf("Set_Precio with a JSON number: HTTP %d %s", resp.StatusCode, resp.Body)
	}
	for price, code := range map[string]string{`"1.23456"`: "1011", `"1,5"`: "1011", `"abc"`: "1011", `922337203685477.5808`: "1011", `true`: "1007"} {
		if resp := set(price); resp.StatusCode != 400 || !strings.Contains(resp.Body, `"cod_error":`+code) {
			t.Errorf("PRECIO_ %s: HTTP %d %s, want cod_error %s", price, resp.StatusCode, resp.Body, code)
		}
	}
	if resp := set(`"-1"`); resp.StatusCode != 200 || !strings.Contains(resp.Body, `***EL PRECIO NO PUEDE SER NEGATIVO***`) {
		t.Fatalf("negative price: HTTP %d %s", resp.StatusCode, resp.Body)
	}
	// The database holds the last accepted price.
	db := fbtest.Open(t, fbtest.Admin(t, fbtest.Demo(t)))
	var price string
	if err := db.QueryRowContext(context.Background(), `SELECT CAST(PRECIO AS VARCHAR(30)) FROM LISTA_PRECIOS WHERE CODIGO = 'INV19999' AND FECHA = ?`, day).Scan(&price); err != nil || price != "99999999999999.9999" {
		t.Fatalf("LISTA_PRECIOS holds %q (%v)", price, err)
	}
}

func TestMalformedCatalogStopsTheFunction(t *testing.T) {
	bad := t.TempDir() + "/catalog.json"
	if err := os.WriteFile(bad, []byte(`{"operations":[{"clave":"Get_X","endpoint":"executequery","procedure":"REST_X","params":[{"name":"FECHA_","kind":"date","format":"DD/MM/YY"}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, buildBootstrap(t, "executequery"))
	cmd.Env = []string{"AWS_LAMBDA_RUNTIME_API=127.0.0.1:1", "GATEWAY_INSTANCES_JSON={}", "GATEWAY_CATALOG=" + bad}
	out, err := cmd.CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("the function started with a malformed catalog (%v): %s", err, out)
	}
	for _, want := range []string{`operations[0] \"Get_X\"`, `params[0] \"FECHA_\"`, `format`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("its log does not name %s: %s", want, out)
		}
	}
}

// invoke2 is invoke for a path and body, failing on an invocation error.
func (r *runtimeAPI) invoke2(t testing.TB, path, body string) events.APIGatewayProxyResponse {
	t.Helper()
	resp, res := r.invoke(restEvent(t, path, body, nil))
	if res.isError {
		t.Fatalf("invocation error: %s", res.body)
	}
	return resp
}

// builtCatalog is what make build CATALOG=file writes into a binary.
func builtCatalog(t testing.TB, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var zipped bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&zipped, gzip.BestCompression)
	zw.Write(data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(zipped.Bytes())
}
