package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// anonymousInstance is an instance the test's access document lets in
// without a token, as the original service did.
type anonymousInstance struct{ tenants.Instance }

func anonymous(cfg erp.Connection) anonymousInstance {
	return anonymousInstance{tenants.Instance{Connection: cfg}}
}

func demoEnv(t testing.TB, cfg gateway.Config) *env {
	return newEnv(t, cfg, map[string]any{"demo": anonymous(fbtest.Demo(t)), "otra": anonymous(fbtest.Other(t))})
}

func TestReadsAnswerLikeTheOriginal(t *testing.T) {
	e := demoEnv(t, gateway.Config{})
	tests := []struct {
		name, instance, body string
		want                 map[string]any // fields of data[0], compared as JSON text
		exception            string         // regexp for ex_execsql
	}{
		{
			name: "reference", instance: "demo", body: `{"CLAVE":"Get_Referencias","CODIGO":"REFGRANDE"}`,
			want: map[string]any{"CODIGO": `"REFGRANDE"`, "CODIGO2": `null`, "NOMBRE": `"Maquinaria industrial ñandú"`,
				"NOMBRE2": `""`, "PRECIO": `98765432109876.5432`, "COSTO": `12345678901234.5678`, "STOCK": `-3.5000`},
		},
		{
			name: "reference not found", instance: "demo", body: `{"CLAVE":"Get_Referencias","CODIGO":"NO-EXISTE"}`,
			exception: `^\[firebirdsql\]exception 16\r\nREST_ERROR\r\n\*\*\*LA REFERENCIA NO-EXISTE NO EXISTE\*\*\*\r\nAt procedure 'REST_SELECT_REFERENCIA' line: \d+, col: \d+$`,
		},
		{
			name: "third party", instance: "demo", body: `{"CLAVE":"Get_Terceros","CODIGO":"10104729"}`,
			want: map[string]any{"CODIGO": `"10104729"`, "NATURALEZA": `"N"`, "EMPRESA": `null`, "NOMBRE": `"María José Gómez Ávila"`, "GERENTE": `""`},
		},
		{
			name: "third party not found", instance: "demo", body: `{"CLAVE":"Get_Terceros","CODIGO":"123"}`,
			exception: `^\[firebirdsql\]exception 16\r\nREST_ERROR\r\n\*\*\*EL TERCERO 123 NO EXISTE\*\*\*\r\nAt procedure 'REST_SELECT_TERCEROS' line: \d+, col: \d+$`,
		},
		{
			name: "document", instance: "demo", body: `{"CLAVE":"Get_Gestion_Primario","TIPO":"FV","PREFIJO":"FE","NUMERO":"1000"}`,
			want: map[string]any{"TIPO": `"FV"`, "PREFIJO": `"FE"`, "NUMERO": `"1000"`, "FECHA": `"2025-05-11"`, "VENCE": `"2025-06-10"`,
				"PLAZO": `30`, "TOTAL": `3131787.13`, "TRM": `3987.6543`},
		},
		{
			name: "document with empty prefix", instance: "demo", body: `{"CLAVE":"Get_Gestion_Primario","TIPO":"RC","PREFIJO":"","NUMERO":"1002"}`,
			want: map[string]any{"TIPO": `"RC"`, "PREFIJO": `""`, "NUMERO": `"1002"`},
		},
		{
			name: "document not found", instance: "demo", body: `{"CLAVE":"Get_Gestion_Primario","TIPO":"FV","PREFIJO":"FE","NUMERO":"9"}`,
			exception: `^\[firebirdsql\]exception 16\r\nREST_ERROR\r\n\*\*\*EL DOCUMENTO FV FE 9 NO EXISTE\*\*\*\r\nAt procedure 'REST_SELECT_GESTION_PRIMARIO' line: \d+, col: \d+$`,
		},
		// Another ERP: WIN1252 database, other data, REST_ERROR is number 19.
		{
			name: "other ERP reference", instance: "otra", body: `{"CLAVE":"Get_Referencias","CODIGO":"PRDGRANDE"}`,
			want: map[string]any{"CODIGO": `"PRDGRANDE"`, "NOMBRE": `"Maquinaria industrial ñandú"`, "PRECIO": `98765432109876.5432`},
		},
		{
			name: "other ERP third party", instance: "otra", body: `{"CLAVE":"Get_Terceros","CODIGO":"800000000"}`,
			want: map[string]any{"EMPRESA": `"Exportadora Café Señorial S.A."`},
		},
		{
			name: "other ERP not found", instance: "otra", body: `{"CLAVE":"Get_Terceros","CODIGO":"NADIE"}`,
			exception: `^\[firebirdsql\]exception 19\r\nREST_ERROR\r\n\*\*\*EL TERCERO NADIE NO EXISTE\*\*\*\r\nAt procedure 'REST_SELECT_TERCEROS' line: \d+, col: \d+$`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.post(t, path(tt.instance, "executequery"), tt.body)
			if r.Status != http.StatusOK || *r.Body.CodError != 0 {
				t.Fatalf("status %d: %s", r.Status, r.Raw)
			}
			if tt.exception != "" {
				if r.Body.ExExecSQL == nil || r.Body.Data != nil || strings.Contains(r.Raw, `"data"`) {
					t.Fatalf("want ex_execsql and no data: %s", r.Raw)
				}
				if !regexp.MustCompile(tt.exception).MatchString(*r.Body.ExExecSQL) {
					t.Fatalf("ex_execsql %q does not match %s", *r.Body.ExExecSQL, tt.exception)
				}
				return
			}
			if r.Body.ExExecSQL != nil || len(r.Body.Data) != 1 {
				t.Fatalf("want one record: %s", r.Raw)
			}
			for field, want := range tt.want {
				got, _ := json.Marshal(r.Body.Data[0][field])
				if string(got) != want {
					t.Errorf("%s = %s, want %s", field, got, want)
				}
			}
		})
	}
}

func TestRecordsKeepTheProcedureOrder(t *testing.T) {
	e := demoEnv(t, gateway.Config{})
	r := e.post(t, path("demo", "executequery"), `{"CLAVE":"Get_Gestion_Primario","TIPO":"FV","PREFIJO":"FE","NUMERO":"1000"}`)
	order := []string{"TIPO", "PREFIJO", "NUMERO", "FECHA", "PLAZO", "VENCE", "NOTA", "TERCERO", "SUCURSAL", "VENDEDOR",
		"LISTA", "BANCO", "BRUTO", "DESCUENTOS", "IMPUESTOS", "RETENCIONES", "TOTAL", "SEDE", "CONCEPTO", "TRM"}
	last := -1
	for _, k := range order {
		i := strings.Index(r.Raw, `"`+k+`":`)
		if i <= last {
			t.Fatalf("%s out of order in %s", k, r.Raw)
		}
		last = i
	}
}

func TestEveryTypeIsEncodedExactly(t *testing.T) {
	setupTypes(t, fbtest.Demo(t))
	e := demoEnv(t, gateway.Config{})
	r := e.post(t, path("demo", "executequery"), `{"CLAVE":"Get_Tipos"}`)
	want := `{"cod_error":0,"data":[` +
		`{"I":42,"BI":9223372036854775807,"N":98765432109876.5432,"D":0.1,"F":2.5,"B":true,"DT":"2024-02-29",` +
		`"TM":"13:14:15.1234","TS":"2024-02-29T13:14:15.1234","BT":"línea 1\nlínea 2","BB":"AP8Q","C":"ab","V":"",` +
		`"NU":null,"E":"ñandú","S":-7,"DC":-0.50,"O":"AP9Bww=="},` +
		`{"I":43,"BI":9223372036854775807,"N":-0.0001,"D":0.1,"F":2.5,"B":false,"DT":"2024-02-29",` +
		`"TM":"13:14:15.1234","TS":"2024-02-29T13:14:15.1234","BT":"línea 1\nlínea 2","BB":"AP8Q","C":null,"V":"",` +
		`"NU":null,"E":"ñandú","S":-7,"DC":-0.50,"O":"AP9Bww=="}]}`
	if r.Raw != want {
		t.Fatalf("got  %s\nwant %s", r.Raw, want)
	}
}

// TestDatesKeepTheirDigitsInAnyTimezone: on an instance whose timezone
// skips an hour (Sao Paulo's clocks went from 23:59 on 3 November 2018 to
// 01:00 on the 4th), a date of that day is answered as the database holds
// it, and passed on by reference as it was answered, where the driver as
// released read it as 23:00 on the day before and the batch wrote the 3rd.
func TestDatesKeepTheirDigitsInAnyTimezone(t *testing.T) {
	cfg := fbtest.Demo(t)
	cfg.Timezone = "America/Sao_Paulo"
	admin := fbtest.Open(t, fbtest.Admin(t, cfg))
	e := newEnv(t, gateway.Config{}, map[string]any{"demo": anonymous(cfg)})
	first := send(t, e.h, "execute", `[{"CLAVE":"Set_Pedido","TERCERO":"800000000","FECHA":"04.11.2018"}]`)
	if first.status != 200 || len(first.answers) != 1 || first.answers[0]["data"] == nil {
		t.Fatalf("%d %s", first.status, first.body)
	}
	number := first.answers[0]["data"].([]any)[0].(map[string]any)["NUMERO"]
	r := send(t, e.h, "execute", fmt.Sprintf(`[{"CLAVE":"Get_Pedido","NUMERO":%v},{"CLAVE":"Set_Pedido","TERCERO":"800000000","FECHA":{"$from":0,"$field":"FECHA"}}]`, number))
	if r.status != 200 || len(r.answers) != 2 || r.answers[1]["data"] == nil {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if got := r.answers[0]["data"].([]any)[0].(map[string]any)["FECHA"]; got != "2018-11-04" {
		t.Errorf("FECHA answered %v, want 2018-11-04", got)
	}
	copied := r.answers[1]["data"].([]any)[0].(map[string]any)["NUMERO"]
	if n := count(t, admin, "SELECT COUNT(*) FROM PEDIDOS WHERE NUMERO IN (?, ?) AND FECHA = DATE '2018-11-04'", number, copied); n != 2 {
		t.Errorf("%d of orders %v and %v written with FECHA 2018-11-04, want both", n, number, copied)
	}
}

// TestDecimalsTakeWhatTheDatabaseHolds: a NUMERIC(15,4) holds what its
// 64-bit integer holds, more than 11 digits before the point: the gateway
// takes such a value, the database stores it and it is answered as sent,
// and one past it is refused before anything is written.
func TestDecimalsTakeWhatTheDatabaseHolds(t *testing.T) {
	cfg := fbtest.Demo(t)
	e := newEnv(t, gateway.Config{}, map[string]any{"demo": anonymous(cfg)})
	line := func(cantidad string) sent {
		return send(t, e.h, "execute", `[{"CLAVE":"Set_Pedido","TERCERO":"800000000"},{"CLAVE":"Set_Pedido_Linea","NUMERO":{"$from":0,"$field":"NUMERO"},"REFERENCIA":"REF0001","CANTIDAD":"`+cantidad+`"}]`)
	}
	r := line("922337203685477.5807")
	if r.status != 200 || len(r.answers) != 2 || r.answers[1]["data"] == nil {
		t.Fatalf("%d %s", r.status, r.body)
	}
	number := r.answers[0]["data"].([]any)[0].(map[string]any)["NUMERO"]
	read := send(t, e.h, "executequery", fmt.Sprintf(`{"CLAVE":"Get_Pedido","NUMERO":%v}`, number))
	if !strings.Contains(read.body, `"CANTIDAD":922337203685477.5807}`) {
		t.Fatalf("read back: %s", read.body)
	}
	if r := line("922337203685477.5808"); r.status != 400 || !strings.Contains(r.body, "outside the values NUMERIC(15,4) holds, -922337203685477.5808 to 922337203685477.5807") {
		t.Fatalf("past the greatest: %d %s", r.status, r.body)
	}
}

func TestErrorPrefixIsConfigurable(t *testing.T) {
	e := demoEnv(t, gateway.Config{ErrorPrefix: "[FireDAC][Phys][FB]", Class: "TVendorRestInterface"})
	r := e.post(t, "/demo/RestServerIsapi.dll/api/v1/TVendorRestInterface/executequery", `{"CLAVE":"Get_Terceros","CODIGO":"X"}`)
	if r.Body.ExExecSQL == nil || !strings.HasPrefix(*r.Body.ExExecSQL, "[FireDAC][Phys][FB]exception 16\r\nREST_ERROR\r\n***EL TERCERO X NO EXISTE***") {
		t.Fatalf("got %s", r.Raw)
	}
	// The default class is not served by a deployment that named its own.
	if r := e.post(t, path("demo", "executequery"), `{"CLAVE":"Get_Terceros","CODIGO":"X"}`); r.Status != http.StatusNotFound {
		t.Fatalf("default class: status %d", r.Status)
	}
}

// setTerceros is a valid Set_Terceros body for code.
func setTerceros(code string, extra ...string) string {
	fields := []string{`"CLAVE":"Set_Terceros"`, `"CODIGO":"` + code + `"`, `"DV":"7"`, `"NATURALEZA":"N"`,
		`"NOM1":"Íñigo"`, `"NOM2":""`, `"APL1":"Ibáñez"`, `"APL2":"Ortíz"`, `"EMPRESA":""`,
		`"RAZON_COMERCIAL":"Ferretería Íñigo"`, `"DIRECCION":"Calle 10 # 4-21"`, `"TELEFONO":"604 4440000"`,
		`"MOVIL":"300 1234567"`, `"EMAIL":"inigo@example.com"`, `"CODIGO_POSTAL":"050021"`, `"GERENTE":""`,
		`"CODIDENTIDAD":"CC"`, `"CODSOCIEDAD":"PN"`, `"CODPAIS":"CO"`, `"CODACTIVIDAD":"NA"`, `"CODZONA":"NA"`,
		`"CODMUNICIPIO":"05001"`}
	return "{" + strings.Join(append(fields, extra...), ",") + "}"
}

func newCode() string { return fmt.Sprintf("T%013d", rand.Int64N(1e13)) }

func TestSetTercerosCreatesAndAnswersLikeGetTerceros(t *testing.T) {
	e := demoEnv(t, gateway.Config{})
	admin := fbtest.Open(t, fbtest.Admin(t, fbtest.Demo(t)))
	code := newCode()

	w := e.post(t, path("demo", "execute"), setTerceros(code))
	if w.Status != http.StatusOK || w.Body.ExExecSQL != nil || len(w.Body.Data) != 1 {
		t.Fatalf("insert: %d %s", w.Status, w.Raw)
	}
	r := e.post(t, path("demo", "executequery"), `{"CLAVE":"Get_Terceros","CODIGO":"`+code+`"}`)
	if w.Raw != r.Raw {
		t.Fatalf("Set_Terceros answered\n%s\nGet_Terceros answers\n%s", w.Raw, r.Raw)
	}
	if got := w.Body.Data[0]["NOMBRE"]; got != "Íñigo Ibáñez Ortíz" {
		t.Fatalf("NOMBRE %v", got)
	}
	if n := count(t, admin, "SELECT COUNT(*) FROM TERCEROS WHERE CODIGO = ?", code); n != 1 {
		t.Fatalf("%d rows in TERCEROS", n)
	}

	dup := e.post(t, path("demo", "execute"), setTerceros(code))
	if dup.Status != http.StatusOK || dup.Body.ExExecSQL == nil || dup.Body.Data != nil ||
		!strings.Contains(*dup.Body.ExExecSQL, "***EL TERCERO "+code+" YA EXISTE***") {
		t.Fatalf("duplicate: %d %s", dup.Status, dup.Raw)
	}
}

func TestSetTercerosWritesNothingWhenTheReadBackFails(t *testing.T) {
	e := demoEnv(t, gateway.Config{})
	admin := fbtest.Open(t, fbtest.Admin(t, fbtest.Demo(t)))
	code := newCode()
	body := strings.Replace(setTerceros(code), "Set_Terceros", "Set_Terceros_ReadBackFails", 1)
	r := e.post(t, path("demo", "execute"), body)
	if r.Body.ExExecSQL == nil || !strings.Contains(*r.Body.ExExecSQL, "LA REFERENCIA "+code+" NO EXISTE") {
		t.Fatalf("got %s", r.Raw)
	}
	if n := count(t, admin, "SELECT COUNT(*) FROM TERCEROS WHERE CODIGO = ?", code); n != 0 {
		t.Fatalf("partial write: %d rows in TERCEROS", n)
	}
}

func TestSetTercerosInAnotherCharacterSet(t *testing.T) {
	e := demoEnv(t, gateway.Config{})
	code := newCode()
	w := e.post(t, path("otra", "execute"), setTerceros(code))
	if len(w.Body.Data) != 1 || w.Body.Data[0]["APL1"] != "Ibáñez" {
		t.Fatalf("insert into WIN1252: %s", w.Raw)
	}
	// Ω has no place in WIN1252: the database refuses, nothing is written.
	bad := e.post(t, path("otra", "execute"), strings.Replace(setTerceros(newCode()), "Íñigo", "Ωmega", 1))
	if bad.Status != http.StatusOK || bad.Body.ExExecSQL == nil || !strings.Contains(*bad.Body.ExExecSQL, "transliterate") {
		t.Fatalf("unencodable text: %d %s", bad.Status, bad.Raw)
	}
}

func TestConcurrentInsertsOfOneCode(t *testing.T) {
	e := demoEnv(t, gateway.Config{})
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	admin := fbtest.Open(t, fbtest.Admin(t, fbtest.Demo(t)))
	code := newCode()

	const n = 16
	var wg sync.WaitGroup
	results := make([]response, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			resp, err := http.Post(srv.URL+path("demo", "execute"), "application/json", strings.NewReader(setTerceros(code)))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			results[i].Status = resp.StatusCode
			if err := json.NewDecoder(resp.Body).Decode(&results[i].Body); err != nil {
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	created, refused := 0, 0
	for _, r := range results {
		switch {
		case r.Status != http.StatusOK:
			t.Errorf("status %d", r.Status)
		case r.Body.ExExecSQL != nil && r.Body.Data == nil:
			refused++
		case len(r.Body.Data) == 1:
			created++
		}
	}
	if created != 1 || refused != n-1 {
		t.Fatalf("%d created, %d refused; want 1 and %d", created, refused, n-1)
	}
	if got := count(t, admin, "SELECT COUNT(*) FROM TERCEROS WHERE CODIGO = ?", code); got != 1 {
		t.Fatalf("%d rows", got)
	}
}

func TestMalformedRequests(t *testing.T) {
	e := demoEnv(t, gateway.Config{MaxBody: 4096})
	q, x := path("demo", "executequery"), path("demo", "execute")
	long := strings.Repeat("x", 5000)
	tests := []struct {
		name, method, path, body string
		status                   int
		code                     erp.Code
	}{
		{"empty body", "POST", q, ``, 400, erp.CodeNotObject},
		{"an array of a number", "POST", q, `[1]`, 400, erp.CodeNotObject},
		{"an empty array", "POST", q, `[]`, 400, erp.CodeBatchEmpty},
		{"string", "POST", q, `"Get_Terceros"`, 400, erp.CodeNotObject},
		{"truncated", "POST", q, `{"CLAVE":"Get_Terceros"`, 400, erp.CodeNotObject},
		{"trailing garbage", "POST", q, `{"CLAVE":"Get_Terceros","CODIGO":"1"} x`, 400, erp.CodeNotObject},
		{"form encoded", "POST", q, `CLAVE=Get_Terceros&CODIGO=1`, 400, erp.CodeNotObject},
		{"over the size limit", "POST", q, `{"CLAVE":"Get_Terceros","CODIGO":"` + long + `"}`, 413, erp.CodeTooLarge},
		{"no CLAVE", "POST", q, `{"CODIGO":"1"}`, 400, erp.CodeClaveMissing},
		{"CLAVE a number", "POST", q, `{"CLAVE":7,"CODIGO":"1"}`, 400, erp.CodeClaveMissing},
		{"CLAVE null", "POST", q, `{"CLAVE":null}`, 400, erp.CodeClaveMissing},
		{"unknown CLAVE", "POST", q, `{"CLAVE":"Get_Todo"}`, 400, erp.CodeClaveUnknown},
		{"write on executequery", "POST", q, setTerceros("1"), 400, erp.CodeWrongEndpoint},
		{"read on execute", "POST", x, `{"CLAVE":"Get_Terceros","CODIGO":"1"}`, 400, erp.CodeWrongEndpoint},
		{"required missing", "POST", q, `{"CLAVE":"Get_Terceros"}`, 400, erp.CodeParamMissing},
		{"required null", "POST", q, `{"CLAVE":"Get_Terceros","CODIGO":null}`, 400, erp.CodeParamMissing},
		{"one of three missing", "POST", q, `{"CLAVE":"Get_Gestion_Primario","TIPO":"FV","PREFIJO":"FE"}`, 400, erp.CodeParamMissing},
		{"write missing a required field", "POST", x, strings.Replace(setTerceros("1"), `"CODMUNICIPIO":"05001"`, `"CODMUNICIPIO":null`, 1), 400, erp.CodeParamMissing},
		{"number", "POST", q, `{"CLAVE":"Get_Terceros","CODIGO":12345}`, 400, erp.CodeParamNotString},
		{"object", "POST", q, `{"CLAVE":"Get_Terceros","CODIGO":{"v":"1"}}`, 400, erp.CodeParamNotString},
		{"boolean", "POST", q, `{"CLAVE":"Get_Terceros","CODIGO":true}`, 400, erp.CodeParamNotString},
		{"array value", "POST", q, `{"CLAVE":"Get_Terceros","CODIGO":["1"]}`, 400, erp.CodeParamNotString},
		{"16 characters in 15", "POST", q, `{"CLAVE":"Get_Terceros","CODIGO":"1234567890123456"}`, 400, erp.CodeParamTooLong},
		{"two characters in DV", "POST", x, strings.Replace(setTerceros("1"), `"DV":"7"`, `"DV":"77"`, 1), 400, erp.CodeParamTooLong},
		{"unknown field", "POST", q, `{"CLAVE":"Get_Terceros","CODIGO":"1","CODGO":"1"}`, 400, erp.CodeUnknownField},
		{"NUL character", "POST", q, `{"CLAVE":"Get_Terceros","CODIGO":"1\u0000"}`, 400, erp.CodeParamInvalid},
		{"invalid UTF-8", "POST", q, "{\"CLAVE\":\"Get_Terceros\",\"CODIGO\":\"\xff\"}", 400, erp.CodeParamInvalid},
		{"GET", "GET", q, ``, 405, erp.CodeMethod},
		{"PUT", "PUT", x, setTerceros("1"), 405, erp.CodeMethod},
		{"unknown endpoint", "POST", path("demo", "executeall"), `{}`, 404, erp.CodeNotFound},
		{"wrong class", "POST", "/demo/RestServerIsapi.dll/api/v1/TOther/executequery", `{}`, 404, erp.CodeNotFound},
		{"wrong version", "POST", "/demo/RestServerIsapi.dll/api/v2/TServiceRestInterface/executequery", `{}`, 404, erp.CodeNotFound},
		{"root", "POST", "/", `{}`, 404, erp.CodeNotFound},
		{"instance with a dot", "POST", path("de.mo", "executequery"), `{"CLAVE":"Get_Terceros","CODIGO":"1"}`, 400, erp.CodeBadInstance},
		{"instance with a space", "POST", path("de%20mo", "executequery"), `{"CLAVE":"Get_Terceros","CODIGO":"1"}`, 400, erp.CodeBadInstance},
		{"instance of 65 characters", "POST", path(strings.Repeat("a", 65), "executequery"), `{"CLAVE":"Get_Terceros","CODIGO":"1"}`, 400, erp.CodeBadInstance},
		{"unknown instance", "POST", path("nadie", "executequery"), `{"CLAVE":"Get_Terceros","CODIGO":"1"}`, 401, erp.CodeUnauthorized},
		{"a CLAVE of 4,000 characters", "POST", q, `{"CLAVE":"` + long[:4000] + `"}`, 400, erp.CodeClaveUnknown},
		{"300 unknown fields", "POST", q, `{"CLAVE":"Get_Terceros","CODIGO":"1"` + manyFields(300) + `}`, 400, erp.CodeUnknownField},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, e.h, tt.method, tt.path, tt.body)
			if r.Status != tt.status || *r.Body.CodError != int(tt.code) {
				t.Fatalf("got %d %s, want %d cod_error %d", r.Status, r.Raw, tt.status, tt.code)
			}
			// A refusal quotes what was sent, a kilobyte of it at most.
			if r.Body.ExExecSQL != nil && len(*r.Body.ExExecSQL) > 1100 {
				t.Fatalf("a refusal's message of %d bytes: %.200s", len(*r.Body.ExExecSQL), r.Raw)
			}
			if r.Body.ExExecSQL == nil || *r.Body.ExExecSQL == "" || r.Body.Data != nil {
				t.Fatalf("want a message in ex_execsql and no data: %s", r.Raw)
			}
		})
	}
	if n := e.db.calls.Load(); n != 0 {
		t.Fatalf("%d malformed requests reached the database", n)
	}
}

// manyFields is n fields no operation takes, as ,"F0":"1",…
func manyFields(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `,"F%d":"1"`, i)
	}
	return b.String()
}

func TestUnavailableDatabaseAnswers503WithoutSecrets(t *testing.T) {
	frozen, err := fbtest.Hang()
	if err != nil {
		t.Fatal(err)
	}
	defer frozen.Close()
	frozenPort := frozen.Addr().(*net.TCPAddr).Port

	good := fbtest.Demo(t)
	closedPort, wrongPassword, noFile, noDir, notADatabase, noAlias, frozenCfg := good, good, good, good, good, good, good
	closedPort.Port = 1
	wrongPassword.Password = "s3cr3t-wrong-pw"
	noFile.Database = "/var/lib/firebird/3.0/data/no-such-erp.fdb"
	noDir.Database = "/srv/no-such-erp-dir/erp.fdb"
	notADatabase.Database = "/etc/no-such-erp-passwd"
	noAlias.Database = "no-such-erp-alias"
	frozenCfg.Port = frozenPort
	instances := map[string]any{
		"closed": anonymous(closedPort), "badpw": anonymous(wrongPassword), "nofile": anonymous(noFile), "nodir": anonymous(noDir),
		"notadb": anonymous(notADatabase), "noalias": anonymous(noAlias), "frozen": anonymous(frozenCfg),
	}
	e := newEnv(t, gateway.Config{Timeout: 500 * time.Millisecond}, instances)
	for instance := range instances {
		t.Run(instance, func(t *testing.T) {
			start := time.Now()
			r := e.post(t, path(instance, "executequery"), `{"CLAVE":"Get_Terceros","CODIGO":"1"}`)
			if r.Status != http.StatusServiceUnavailable || *r.Body.CodError != int(erp.CodeUnavailable) {
				t.Fatalf("got %d %s", r.Status, r.Raw)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Fatalf("took %s with a 500ms deadline", took)
			}
			for _, secret := range []string{good.Password, "s3cr3t-wrong-pw", good.Host, good.Database, "no-such-erp", "/etc", good.User, fmt.Sprint(frozenPort)} {
				if strings.Contains(r.Raw, secret) {
					t.Fatalf("response holds %q: %s", secret, r.Raw)
				}
			}
		})
	}
	for _, secret := range []string{good.Password, "s3cr3t-wrong-pw"} {
		if strings.Contains(e.log.String(), secret) {
			t.Fatalf("logs hold a password:\n%s", e.log.String())
		}
	}
}

func TestFailingCallsLeaveNoOpenStatements(t *testing.T) {
	e := demoEnv(t, gateway.Config{})
	admin := fbtest.Open(t, fbtest.Admin(t, fbtest.Demo(t)))
	existing := newCode()
	e.post(t, path("demo", "execute"), setTerceros(existing))
	failing := []struct{ endpoint, body string }{
		{"executequery", `{"CLAVE":"Get_Referencias","CODIGO":"NO-EXISTE"}`},
		{"executequery", `{"CLAVE":"Get_Terceros","CODIGO":"NO-EXISTE"}`},
		{"executequery", `{"CLAVE":"Get_Gestion_Primario","TIPO":"X","PREFIJO":"X","NUMERO":"X"}`},
		{"execute", setTerceros(existing)},
	}
	run := func(n int) {
		for i := range n {
			f := failing[i%len(failing)]
			if r := e.post(t, path("demo", f.endpoint), f.body); r.Body.ExExecSQL == nil {
				t.Fatalf("call %d did not fail: %s", i, r.Raw)
			}
		}
	}
	const statements = "SELECT COUNT(*) FROM MON$STATEMENTS WHERE MON$ATTACHMENT_ID <> CURRENT_CONNECTION"
	run(40) // warm the pool
	before := count(t, admin, statements)
	run(1000)
	after := count(t, admin, statements)
	t.Logf("open statements: %d before, %d after 1000 failing calls", before, after)
	if after > before+4 {
		t.Fatalf("open statements grew from %d to %d", before, after)
	}
}

func TestRecoversAfterAFirebirdRestart(t *testing.T) {
	e := demoEnv(t, gateway.Config{})
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	read := func() (int, string) {
		resp, err := http.Post(srv.URL+path("demo", "executequery"), "application/json",
			strings.NewReader(`{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// Fill the pool with several connections.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { read() })
	}
	wg.Wait()

	restartFirebird(t)
	statuses := make(chan int, 20)
	for range 4 {
		wg.Go(func() {
			for range 5 {
				code, _ := read()
				statuses <- code
			}
		})
	}
	wg.Wait()
	close(statuses)
	for code := range statuses {
		if code != http.StatusOK {
			t.Fatalf("a read after the restart answered %d", code)
		}
	}
}

func TestPoolIsReusedPerInstance(t *testing.T) {
	e := demoEnv(t, gateway.Config{})
	admin := fbtest.Open(t, fbtest.Admin(t, fbtest.Demo(t)))
	const attachments = "SELECT COUNT(*) FROM MON$ATTACHMENTS WHERE MON$USER = 'GATEWAY' AND MON$ATTACHMENT_ID <> CURRENT_CONNECTION"
	e.post(t, path("demo", "executequery"), `{"CLAVE":"Get_Terceros","CODIGO":"800000000"}`)
	before := count(t, admin, attachments)
	for range 50 {
		e.post(t, path("demo", "executequery"), `{"CLAVE":"Get_Terceros","CODIGO":"800000000"}`)
	}
	if after := count(t, admin, attachments); after != before {
		t.Fatalf("attachments went from %d to %d over 50 sequential requests", before, after)
	}
}
