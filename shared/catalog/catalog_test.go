package catalog

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/erp"
)

func TestDefaultCatalogIsValid(t *testing.T) {
	c := Default()
	for _, clave := range []string{"Get_Referencias", "Get_Terceros", "Get_Gestion_Primario", "Set_Terceros"} {
		if _, ok := c.Lookup(clave); !ok {
			t.Errorf("%s missing", clave)
		}
	}
	op, _ := c.Lookup("Set_Terceros")
	if len(op.Params) != 21 {
		t.Errorf("Set_Terceros has %d parameters, want the specification's 21", len(op.Params))
	}
}

func TestNewRefusesBadTables(t *testing.T) {
	good := Operation{Clave: "X", Endpoint: ExecuteQuery, Procedure: "P", Params: []Param{{Name: "A", MaxLen: 1}}}
	tests := []struct {
		name string
		ops  []Operation
	}{
		{"duplicate clave", []Operation{good, good}},
		{"unknown endpoint", []Operation{{Clave: "X", Endpoint: "other", Procedure: "P"}}},
		{"procedure with SQL in it", []Operation{{Clave: "X", Endpoint: Execute, Procedure: "P; DROP TABLE T"}}},
		{"parameter named CLAVE", []Operation{{Clave: "X", Endpoint: Execute, Procedure: "P", Params: []Param{{Name: "CLAVE", MaxLen: 1}}}}},
		{"zero length", []Operation{{Clave: "X", Endpoint: Execute, Procedure: "P", Params: []Param{{Name: "A"}}}}},
		{"read-back of an unknown parameter", []Operation{{Clave: "X", Endpoint: Execute, Procedure: "P",
			Params: []Param{{Name: "A", MaxLen: 1}}, ReadBack: &ReadBack{Procedure: "Q", Params: []string{"B"}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.ops); err == nil {
				t.Fatal("New accepted it")
			}
		})
	}
}

func TestParse(t *testing.T) {
	c := Default()
	tests := []struct {
		name     string
		endpoint Endpoint
		body     string
		code     erp.Code // 0: accepted
		args     []any
	}{
		{"read", ExecuteQuery, `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`, 0, []any{"REF0001"}},
		{"whitespace before the object", ExecuteQuery, " \n{\"CLAVE\":\"Get_Terceros\",\"CODIGO\":\"1\"}", 0, []any{"1"}},
		{"20 accented letters fit 20 characters", ExecuteQuery, `{"CLAVE":"Get_Referencias","CODIGO":"ÁÉÍÓÚÑÜáéíóúñüÁÉÍÓÚÑ"}`, 0, []any{"ÁÉÍÓÚÑÜáéíóúñüÁÉÍÓÚÑ"}},
		{"empty string stays empty", ExecuteQuery, `{"CLAVE":"Get_Gestion_Primario","TIPO":"FV","PREFIJO":"","NUMERO":"1"}`, 0, []any{"FV", "", "1"}},
		{"optional null is SQL NULL", Execute, `{"CLAVE":"Set_Terceros","CODIGO":"1","DV":"1","NATURALEZA":"N","RAZON_COMERCIAL":"x","DIRECCION":"x","CODIDENTIDAD":"CC","CODSOCIEDAD":"PN","CODPAIS":"CO","CODMUNICIPIO":"05001","NOM1":null}`, 0, nil},
		{"array", ExecuteQuery, `[{"CLAVE":"Get_Terceros"}]`, erp.CodeNotObject, nil},
		{"21 characters", ExecuteQuery, `{"CLAVE":"Get_Referencias","CODIGO":"ÁÉÍÓÚÑÜáéíóúñüÁÉÍÓÚÑx"}`, erp.CodeParamTooLong, nil},
		{"escaped NUL", ExecuteQuery, `{"CLAVE":"Get_Referencias","CODIGO":"a\u0000b"}`, erp.CodeParamInvalid, nil},
		{"lone surrogate", ExecuteQuery, `{"CLAVE":"Get_Referencias","CODIGO":"\ud800"}`, erp.CodeParamInvalid, nil},
		{"lone low surrogate", ExecuteQuery, `{"CLAVE":"Get_Referencias","CODIGO":"a\udc00b"}`, erp.CodeParamInvalid, nil},
		{"high surrogate then a letter", ExecuteQuery, `{"CLAVE":"Get_Referencias","CODIGO":"\ud83d\u0041"}`, erp.CodeParamInvalid, nil},
		{"a surrogate pair", ExecuteQuery, `{"CLAVE":"Get_Referencias","CODIGO":"\ud83d\ude00"}`, 0, []any{"😀"}},
		{"U+FFFD escaped", ExecuteQuery, `{"CLAVE":"Get_Referencias","CODIGO":"a\uFFFDb\\ud800"}`, 0, []any{"a\ufffdb\\ud800"}},
		{"U+FFFD as itself", ExecuteQuery, `{"CLAVE":"Get_Referencias","CODIGO":"a�b"}`, 0, []any{"a\ufffdb"}},
		{"U+FFFD beside bytes that are not UTF-8", ExecuteQuery, "{\"CLAVE\":\"Get_Referencias\",\"CODIGO\":\"\ufffd\xff\"}", erp.CodeParamInvalid, nil},
		{"Windows-1252 bytes", ExecuteQuery, "{\"CLAVE\":\"Get_Referencias\",\"CODIGO\":\"Pe\xf1a\"}", erp.CodeParamInvalid, nil},
		{"required null", ExecuteQuery, `{"CLAVE":"Get_Referencias","CODIGO":null}`, erp.CodeParamMissing, nil},
		{"CLAVE is case sensitive", ExecuteQuery, `{"CLAVE":"get_referencias","CODIGO":"1"}`, erp.CodeClaveUnknown, nil},
		{"a field twice", ExecuteQuery, `{"CLAVE":"Get_Referencias","CODIGO":"REF0001","CODIGO":"REF0002"}`, erp.CodeNotObject, nil},
		{"CLAVE twice", ExecuteQuery, `{"CLAVE":"Set_Terceros","CLAVE":"Get_Referencias","CODIGO":"1"}`, erp.CodeNotObject, nil},
		{"a name twice in another spelling is two names", ExecuteQuery, `{"CLAVE":"Get_Referencias","CODIGO":"1","C\u004fDIGO":"2"}`, erp.CodeNotObject, nil},
		{"colons and braces inside strings", ExecuteQuery, `{"CLAVE":"Get_Referencias","CODIGO":"a:{\"b\":[1]}"}`, 0, []any{`a:{"b":[1]}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, err := c.Parse(tt.endpoint, []byte(tt.body))
			if tt.code != 0 {
				if err == nil || err.Code != tt.code {
					t.Fatalf("got %v, want code %d", err, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if tt.args != nil && !reflect.DeepEqual(call.Args, tt.args) {
				t.Fatalf("args %#v, want %#v", call.Args, tt.args)
			}
		})
	}
}

func TestReadBackArgsFollowTheWrite(t *testing.T) {
	c := Default()
	body := `{"CLAVE":"Set_Terceros","CODIGO":"900","DV":"1","NATURALEZA":"J","RAZON_COMERCIAL":"x","DIRECCION":"x","CODIDENTIDAD":"NIT","CODSOCIEDAD":"SAS","CODPAIS":"CO","CODMUNICIPIO":"05001"}`
	call, err := c.Parse(Execute, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if got := call.ReadBackArgs(); !reflect.DeepEqual(got, []any{"900"}) {
		t.Fatalf("read-back args %#v", got)
	}
}

func TestMessagesNameTheProblem(t *testing.T) {
	_, err := Default().Parse(ExecuteQuery, []byte(`{"CLAVE":"Get_Referencias","CODIGO":"1","CODGO":"2","X":1}`))
	if err == nil || err.Code != erp.CodeUnknownField || !strings.Contains(err.Message, `"CODGO", "X"`) {
		t.Fatalf("got %v", err)
	}
	// An old client's ANSI text is told to send UTF-8, not that its
	// characters cannot be stored.
	_, err = Default().Parse(ExecuteQuery, []byte("{\"CLAVE\":\"Get_Referencias\",\"CODIGO\":\"Pe\xf1a\"}"))
	if err == nil || err.Code != erp.CodeParamInvalid || !strings.Contains(err.Message, "CODIGO") || !strings.Contains(err.Message, "UTF-8") {
		t.Fatalf("got %v", err)
	}
}

func TestExamplesPassValidation(t *testing.T) {
	tests := []Param{
		{Name: "T", MaxLen: 1, Required: true},
		{Name: "D", Kind: Date, Required: true},
		{Name: "DY", Kind: Date, Format: "YYYY-MM-DD", Required: true},
		{Name: "I", Kind: Integer, Bits: 16, Required: true},
		{Name: "N", Kind: Decimal, Precision: 5, Scale: 2, Required: true},
	}
	for _, p := range tests {
		t.Run(p.Name, func(t *testing.T) {
			c, err := New([]Operation{{Clave: "X", Endpoint: ExecuteQuery, Procedure: "P", Params: []Param{p}}})
			if err != nil {
				t.Fatal(err)
			}
			op, _ := c.Lookup("X")
			body := `{"CLAVE":"X","` + p.Name + `":"` + op.Params[0].Example() + `"}`
			if _, refused := c.Parse(ExecuteQuery, []byte(body)); refused != nil {
				t.Fatalf("%s refused: %v", body, refused)
			}
		})
	}
}

func TestFingerprintIsTheValidatedRequest(t *testing.T) {
	c := Default()
	fp := func(body string) string {
		call, refused := c.Parse(ExecuteQuery, []byte(body))
		if refused != nil {
			t.Fatalf("%s: %v", body, refused)
		}
		return call.Fingerprint()
	}
	a := fp(`{"CLAVE":"Get_Gestion_Primario","TIPO":"FV","PREFIJO":"FE","NUMERO":"1000"}`)
	if b := fp(` { "NUMERO":"1000", "PREFIJO":"FE","TIPO":"FV", "CLAVE":"Get_Gestion_Primario" }`); a != b {
		t.Error("spacing and field order change the fingerprint")
	}
	for _, other := range []string{
		`{"CLAVE":"Get_Gestion_Primario","TIPO":"FV","PREFIJO":"FE","NUMERO":"1001"}`,
		`{"CLAVE":"Get_Gestion_Primario","TIPO":"FVF","PREFIJO":"E","NUMERO":"1000"}`,
		`{"CLAVE":"Get_Gestion_Primario","TIPO":"FV","PREFIJO":"FE1","NUMERO":"000"}`,
	} {
		if fp(other) == a {
			t.Errorf("%s has the fingerprint of another request", other)
		}
	}
}

// TestReferenced: a value a $from takes is checked as the request's value
// would be, written as the answer wrote it; a date keeps its day, bytes
// pass as they are.
func TestReferenced(t *testing.T) {
	stamp := time.Date(2018, 11, 4, 0, 30, 0, 0, time.FixedZone("-03", -3*3600))
	tests := []struct {
		name     string
		p        Param
		v        any
		answered string
		null     bool
		want     any
		code     erp.Code
	}{
		{"an integer", Param{Name: "N", Kind: Integer, Bits: 16}, int64(7), "7", false, int64(7), 0},
		{"past its bits", Param{Name: "N", Kind: Integer, Bits: 16}, int64(40000), "40000", false, nil, erp.CodeParamFormat},
		{"a decimal into an integer", Param{Name: "N", Kind: Integer, Bits: 32}, "1.2345", "1.2345", false, nil, erp.CodeParamFormat},
		{"zero into a NUMERIC(18,0)", Param{Name: "D", Kind: Decimal, Precision: 18}, int64(0), "0", false, "0", 0},
		{"decimals a decimal holds", Param{Name: "D", Kind: Decimal, Precision: 9, Scale: 2}, "12.3000", "12.3000", false, "12.3", 0},
		{"more decimals than it holds", Param{Name: "D", Kind: Decimal, Precision: 9, Scale: 2}, "1.2345", "1.2345", false, nil, erp.CodeParamFormat},
		{"a small NUMERIC into text, as answered", Param{Name: "T", Kind: Text, MaxLen: 20}, "1.2E-7", "0.00000012", false, "0.00000012", 0},
		{"a timestamp into text, as answered", Param{Name: "T", Kind: Text, MaxLen: 30}, stamp, "2018-11-04T00:30:00", false, "2018-11-04T00:30:00", 0},
		{"a timestamp into a date: its digits", Param{Name: "F", Kind: Date}, stamp, "2018-11-04T00:30:00", false, time.Date(2018, 11, 4, 0, 30, 0, 0, time.UTC), 0},
		{"a time of day into a date", Param{Name: "F", Kind: Date}, time.Date(0, 1, 1, 0, 30, 0, 0, time.UTC), "00:30:00", false, nil, erp.CodeParamFormat},
		{"text too long", Param{Name: "T", Kind: Text, MaxLen: 3}, "ñandú", "ñandú", false, nil, erp.CodeParamTooLong},
		{"bytes into text, as they are", Param{Name: "T", Kind: Text, MaxLen: 4}, []byte{0, 0xff, 1, 2}, "AP8BAg==", false, []byte{0, 0xff, 1, 2}, 0},
		{"more bytes than fit", Param{Name: "T", Kind: Text, MaxLen: 3}, []byte{0, 0xff, 1, 2}, "AP8BAg==", false, nil, erp.CodeParamTooLong},
		{"NA into an integer: absent", Param{Name: "N", Kind: Integer, Bits: 32}, "NA", "NA", false, nil, 0},
		{"NULL, optional", Param{Name: "N", Kind: Integer, Bits: 32}, nil, "", true, nil, 0},
		{"NULL, required", Param{Name: "N", Kind: Integer, Bits: 32, Required: true}, nil, "", true, nil, erp.CodeParamMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, refused := tt.p.Referenced("Set_X", tt.v, tt.answered, !tt.null)
			if tt.code != 0 {
				if refused == nil || refused.Code != tt.code || !strings.Contains(refused.Message, tt.p.Name) {
					t.Fatalf("%v, %v; want refused %d", got, refused, tt.code)
				}
				return
			}
			if refused != nil || fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("%#v, %v; want %#v", got, refused, tt.want)
			}
		})
	}
}
