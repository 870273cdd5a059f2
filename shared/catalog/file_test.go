package catalog

import (
	"encoding/json"
	"math/big"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// catalogFiles are the catalogs the repository ships.
var catalogFiles = []string{"default.json", "../../infra/catalog.demo.json"}

func TestShippedCatalogsLoad(t *testing.T) {
	for _, f := range catalogFiles {
		if _, err := LoadFile(f); err != nil {
			t.Error(err)
		}
	}
}

// schema compiles catalog.schema.json, the published description of the file.
func schema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	s, err := c.Compile("catalog.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validate(t *testing.T, s *jsonschema.Schema, data []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v)
}

// The schema and the loader must agree: every shipped catalog passes both,
// every malformed one below fails both, except what JSON Schema cannot say
// (one entry against another).
func TestSchemaAgreesWithTheLoader(t *testing.T) {
	s := schema(t)
	for _, f := range catalogFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := validate(t, s, data); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	loaderOnly := map[string]bool{"not JSON": true, "duplicate CLAVE": true, "parameter twice": true, "read-back of an unknown parameter": true, "scale over precision": true}
	for _, tt := range malformed {
		if loaderOnly[tt.name] {
			continue
		}
		if validate(t, s, []byte(tt.doc)) == nil {
			t.Errorf("%s: the schema accepts it", tt.name)
		}
	}
}

// op wraps one operation entry into a catalog document.
func op(entry string) string { return `{"operations":[` + entry + `]}` }

var malformed = []struct {
	name, doc string
	want      string // the error names the entry and the field
}{
	{"not JSON", `{"operations":[`, "not valid JSON"},
	{"no operations", `{"operations":[]}`, "operations: the catalog has none"},
	{"unknown top-level field", `{"operations":[{"clave":"Get_X","endpoint":"executequery","procedure":"P"}], "extra":1}`, `unknown field "extra"`},
	{"misspelt field", op(`{"clave":"Get_X","endpoint":"executequery","procedure":"P","parms":[]}`), `operations[0] "Get_X": unknown field "parms"`},
	{"field in another case", op(`{"clave":"Get_X","endpoint":"executequery","procedure":"P","params":[{"name":"A","Max_Chars":5}]}`), `params[0]: unknown field "Max_Chars"`},
	{"null", op(`{"clave":"Get_X","endpoint":"executequery","procedure":"P","params":null}`), `operations[0] "Get_X": params: null is not a value here`},
	{"null kind", op(`{"clave":"Get_X","endpoint":"executequery","procedure":"P","params":[{"name":"A","kind":null,"max_chars":5}]}`), `params[0]: kind: null is not a value here`},
	{"zero row cap", op(`{"clave":"Get_X","endpoint":"executequery","procedure":"P","max_rows":0}`), `max_rows: must be at least 1`},
	{"zero length on a date", op(`{"clave":"Get_X","endpoint":"executequery","procedure":"P","params":[{"name":"A","kind":"date","max_chars":0}]}`), `params[0] "A": max_chars: a parameter of kind date has none`},
	{"empty format on an integer", op(`{"clave":"Get_X","endpoint":"executequery","procedure":"P","params":[{"name":"A","kind":"integer","format":""}]}`), `params[0] "A": format: a parameter of kind integer has none`},
	{"wrong type", op(`{"clave":"Get_X","endpoint":"executequery","procedure":"P","max_rows":"10"}`), `operations[0] "Get_X": max_rows: string where int belongs`},
	{"wrong type at the top", `{"$comment":1,"operations":[{"clave":"Get_X","endpoint":"executequery","procedure":"P"}]}`, `$comment: number where string belongs`},
	{"wrong type in a read-back", op(`{"clave":"Set_X","endpoint":"execute","procedure":"P","read_back":{"procedure":1}}`), `operations[0] "Set_X": read_back.procedure: number where string belongs`},
	{"unknown endpoint", op(`{"clave":"Get_X","endpoint":"query","procedure":"P"}`), `operations[0] "Get_X": endpoint: "query" is neither`},
	{"SQL in a procedure name", op(`{"clave":"Get_X","endpoint":"executequery","procedure":"P; DROP TABLE T"}`), `operations[0] "Get_X": procedure: "P; DROP TABLE T" is not a plain identifier`},
	{"a packaged procedure", op(`{"clave":"Get_X","endpoint":"executequery","procedure":"PKG_REST.GET_UNO"}`), `procedure: "PKG_REST.GET_UNO" is not a plain identifier of at most 31 characters (letters, digits, _ and $): a procedure of a package cannot be called; a procedure outside it that calls it can`},
	{"a procedure name longer than Firebird 3 keeps", op(`{"clave":"Get_X","endpoint":"executequery","procedure":"REST_SELECT_CLIENTES_POR_CIUDAD_1"}`), `procedure: "REST_SELECT_CLIENTES_POR_CIUDAD_1" is not a plain identifier of at most 31 characters`},
	{"a read-back's name longer than Firebird 3 keeps", op(`{"clave":"Set_X","endpoint":"execute","procedure":"P","read_back":{"procedure":"REST_SELECT_CLIENTES_POR_CIUDAD_1"}}`), `read_back.procedure: "REST_SELECT_CLIENTES_POR_CIUDAD_1" is not a plain identifier of at most 31 characters`},
	{"duplicate CLAVE", `{"operations":[{"clave":"Get_X","endpoint":"executequery","procedure":"P"},{"clave":"Get_X","endpoint":"executequery","procedure":"Q"}]}`, `operations[1] "Get_X": clave: defined twice`},
	{"text without length", op(`{"clave":"Get_X","endpoint":"executequery","procedure":"P","params":[{"name":"A"}]}`), `operations[0] "Get_X": params[0] "A": max_chars:`},
	{"unknown kind", op(`{"clave":"Get_X","endpoint":"executequery","procedure":"P","params":[{"name":"A","kind":"datetime"}]}`), `params[0] "A": kind: "datetime" is not one of text, date, integer, decimal`},
	{"date format without a year", op(`{"clave":"Get_X","endpoint":"executequery","procedure":"P","params":[{"name":"A","kind":"date","format":"DD.MM"}]}`), `params[0] "A": format: "DD.MM": DD, MM and YYYY must each appear once`},
	{"two-digit year", op(`{"clave":"Get_X","endpoint":"executequery","procedure":"P","params":[{"name":"A","kind":"date","format":"DD/MM/YY"}]}`), `params[0] "A": format: "DD/MM/YY": only DD, MM, YYYY`},
	{"decimal too precise", op(`{"clave":"Get_X","endpoint":"executequery","procedure":"P","params":[{"name":"A","kind":"decimal","precision":40,"scale":2}]}`), `params[0] "A": precision: 40 is not between 1 and 18`},
	{"decimal without scale", op(`{"clave":"Get_X","endpoint":"executequery","procedure":"P","params":[{"name":"A","kind":"decimal","precision":18}]}`), `params[0] "A": precision, scale: a decimal parameter needs both`},
	{"integer of 8 bits", op(`{"clave":"Get_X","endpoint":"executequery","procedure":"P","params":[{"name":"A","kind":"integer","bits":8}]}`), `params[0] "A": bits: 8 is not 16`},
	{"length on a date", op(`{"clave":"Get_X","endpoint":"executequery","procedure":"P","params":[{"name":"A","kind":"date","max_chars":10}]}`), `params[0] "A": max_chars: a parameter of kind date has none`},
	{"scale over precision", op(`{"clave":"Get_X","endpoint":"executequery","procedure":"P","params":[{"name":"A","kind":"decimal","precision":4,"scale":6}]}`), `params[0] "A": scale: 6 is not between 0 and the precision, 4`},
	{"parameter named CLAVE", op(`{"clave":"Get_X","endpoint":"executequery","procedure":"P","params":[{"name":"CLAVE","max_chars":1}]}`), `params[0] "CLAVE": name:`},
	{"parameter twice", op(`{"clave":"Get_X","endpoint":"executequery","procedure":"P","params":[{"name":"A","max_chars":1},{"name":"A","max_chars":1}]}`), `params[1] "A": name: defined twice`},
	{"read with read-back", op(`{"clave":"Get_X","endpoint":"executequery","procedure":"P","read_back":{"procedure":"Q"}}`), `operations[0] "Get_X": read_back: only a write`},
	{"read-back of an unknown parameter", op(`{"clave":"Set_X","endpoint":"execute","procedure":"P","params":[{"name":"A","max_chars":1}],"read_back":{"procedure":"Q","params":["B"]}}`), `read_back.params[0]: "B" is not a parameter`},
	{"negative row cap", op(`{"clave":"Get_X","endpoint":"executequery","procedure":"P","max_rows":-1}`), `max_rows: -1 is negative`},
}

func TestMalformedCatalogsNameEntryAndField(t *testing.T) {
	for _, tt := range malformed {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.doc))
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not name %q", err, tt.want)
			}
		})
	}
}

func TestLoadFileNamesTheFile(t *testing.T) {
	path := t.TempDir() + "/bad.json"
	if err := os.WriteFile(path, []byte(malformed[9].doc), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadFile(path)
	if err == nil || !strings.HasPrefix(err.Error(), "catalog "+path+": operations[0]") {
		t.Fatalf("got %v", err)
	}
}

func TestTypedParameters(t *testing.T) {
	c, err := Decode([]byte(op(`{"clave":"Get_X","endpoint":"executequery","procedure":"P","params":[
		{"name":"FECHA_","kind":"date","required":true},
		{"name":"ISO","kind":"date","format":"YYYY-MM-DD"},
		{"name":"N","kind":"integer","bits":16},
		{"name":"BIG","kind":"integer","bits":64},
		{"name":"PRECIO","kind":"decimal","precision":6,"scale":2},
		{"name":"REF_","max_chars":5}]}`)))
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		fields string
		code   erp.Code
		args   []any
	}{
		{"the original's dates and NA", `"FECHA_":"22.11.2026","ISO":"NA","N":"NA","PRECIO":"","REF_":"NA"`, 0, []any{day, nil, nil, nil, nil, "NA"}},
		{"every kind", `"FECHA_":"22.11.2026","ISO":"2026-11-22","N":"-32768","BIG":9223372036854775807,"PRECIO":"1234.5","REF_":""`, 0, []any{day, day, int64(-32768), int64(9223372036854775807), "1234.5", ""}},
		{"decimal forms", `"FECHA_":"22.11.2026","PRECIO":"+0001234.50"`, 0, []any{day, nil, nil, nil, "1234.5", nil}},
		{"zero", `"FECHA_":"22.11.2026","PRECIO":-0.00`, 0, []any{day, nil, nil, nil, "0", nil}},
		{"decimal as a JSON number with exponent", `"FECHA_":"22.11.2026","PRECIO":1.5e2`, 0, []any{day, nil, nil, nil, "150", nil}},
		{"negative zero", `"FECHA_":"22.11.2026","PRECIO":"-0.00"`, 0, []any{day, nil, nil, nil, "0", nil}},
		{"leap day", `"FECHA_":"29.02.2028"`, 0, []any{time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC), nil, nil, nil, nil, nil}},
		{"no 29 February in 2026", `"FECHA_":"29.02.2026"`, erp.CodeParamFormat, nil},
		{"one-digit day", `"FECHA_":"1.11.2026"`, erp.CodeParamFormat, nil},
		{"ISO where DD.MM.YYYY is named", `"FECHA_":"2026-11-22"`, erp.CodeParamFormat, nil},
		{"a date is a string", `"FECHA_":20261122`, erp.CodeParamNotString, nil},
		{"required date given as NA", `"FECHA_":"NA"`, erp.CodeParamMissing, nil},
		{"required date empty", `"FECHA_":""`, erp.CodeParamMissing, nil},
		{"SMALLINT overflow", `"FECHA_":"22.11.2026","N":"32768"`, erp.CodeParamFormat, nil},
		{"integer with decimals", `"FECHA_":"22.11.2026","N":1.0`, erp.CodeParamFormat, nil},
		{"too many decimals", `"FECHA_":"22.11.2026","PRECIO":"1.005"`, erp.CodeParamFormat, nil},
		{"beyond what NUMERIC(6,2) is stored in", `"FECHA_":"22.11.2026","PRECIO":"21474836.48"`, erp.CodeParamFormat, nil},
		{"beyond it, by an exponent", `"FECHA_":"22.11.2026","PRECIO":-2.15e7`, erp.CodeParamFormat, nil},
		{"more digits than p−s, as the database takes them", `"FECHA_":"22.11.2026","PRECIO":"21474836.47"`, 0, []any{day, nil, nil, nil, "21474836.47", nil}},
		{"the least it is stored in", `"FECHA_":"22.11.2026","PRECIO":"-21474836.48"`, 0, []any{day, nil, nil, nil, "-21474836.48", nil}},
		{"decimal comma", `"FECHA_":"22.11.2026","PRECIO":"1,5"`, erp.CodeParamFormat, nil},
		{"two signs", `"FECHA_":"22.11.2026","PRECIO":"+-1"`, erp.CodeParamFormat, nil},
		{"a number is not text", `"FECHA_":"22.11.2026","REF_":12`, erp.CodeParamNotString, nil},
		{"a boolean is not a number", `"FECHA_":"22.11.2026","N":true`, erp.CodeParamNotString, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, refused := c.Parse(ExecuteQuery, []byte(`{"CLAVE":"Get_X",`+tt.fields+`}`))
			if tt.code != 0 {
				if refused == nil || refused.Code != tt.code {
					t.Fatalf("got %v, want cod_error %d", refused, tt.code)
				}
				return
			}
			if refused != nil {
				t.Fatalf("refused: %v", refused)
			}
			if !reflect.DeepEqual(call.Args, tt.args) {
				t.Fatalf("args %#v, want %#v", call.Args, tt.args)
			}
		})
	}
}

func TestRefusalMessagesOfTypedParameters(t *testing.T) {
	c, err := LoadFile("../../infra/catalog.demo.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]string{
		`{"CLAVE":"Get_Inventario_Precio","FECHA_CORTE_":"2026-11-22"}`:                                   "FECHA_CORTE_ must be a date written DD.MM.YYYY, e.g. 22.11.2026",
		`{"CLAVE":"Get_Inventario_Precio","FECHA_CORTE_":"31.02.2026"}`:                                   "FECHA_CORTE_ is written DD.MM.YYYY but 31.02.2026 is not a day of the calendar",
		`{"CLAVE":"Get_Inventario_Precio","FECHA_CORTE_":"01.13.2026"}`:                                   "FECHA_CORTE_ is written DD.MM.YYYY but 01.13.2026 is not a day of the calendar",
		`{"CLAVE":"Get_Inventario_Precio","FECHA_CORTE_":"1.1.2026"}`:                                     "FECHA_CORTE_ must be a date written DD.MM.YYYY, e.g. 22.11.2026",
		`{"CLAVE":"Get_Pedido","NUMERO":1e3}`:                                                             "NUMERO must be a whole number of 32 bits (-2147483648 to 2147483647), written in digits, without a point or exponent",
		`{"CLAVE":"Set_Precio","REFERENCIA_":"R","FECHA_":"22.11.2026","PRECIO_":"1.23456"}`:              "PRECIO_ must be a number of NUMERIC(18,4), at most 4 digits after the decimal point, written with a point: more than 4 decimals",
		`{"CLAVE":"Set_Precio","REFERENCIA_":"R","FECHA_":"22.11.2026","PRECIO_":"922337203685477.5808"}`: "PRECIO_ must be a number of NUMERIC(18,4), at most 4 digits after the decimal point, written with a point: outside the values NUMERIC(18,4) holds, -922337203685477.5808 to 922337203685477.5807",
	}
	for body, want := range tests {
		endpoint := ExecuteQuery
		if strings.Contains(body, "Set_") {
			endpoint = Execute
		}
		call, refused := c.Parse(endpoint, []byte(body))
		if refused == nil || refused.Message != want {
			t.Errorf("%s: got %v, want %q", body, refused, want)
		}
		// The request's log line names the operation it was refused for.
		if call.Op == nil || !strings.Contains(body, `"`+call.Op.Clave+`"`) {
			t.Errorf("%s: the refusal carries the operation %v", body, call.Op)
		}
	}
}

// FuzzParse: any body either becomes a call or a refusal with a message,
// never a panic; an accepted decimal is the number that was sent.
func FuzzParse(f *testing.F) {
	c, err := LoadFile("../../infra/catalog.demo.json")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		`{"CLAVE":"Set_Precio","REFERENCIA_":"R","FECHA_":"29.02.2028","PRECIO_":"-0001.5000"}`,
		`{"CLAVE":"Set_Precio","REFERENCIA_":"R","FECHA_":"01.01.2026","PRECIO_":1.5e-3}`,
		`{"CLAVE":"Set_Precio","REFERENCIA_":"R","FECHA_":"01.01.2026","PRECIO_":1e999999999}`,
		`{"CLAVE":"Get_Inventario_Precio","FECHA_CORTE_":"NA","REFERENCIA_":"NA"}`,
		`{"CLAVE":"Set_Terceros","CODIGO":"\u0000"}`,
		`{"CLAVE":"Get_Referencias","CODIGO":"\ufffd\ud83d\ude00\\ud800"}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		// members counts what a map of the object loses: a name given
		// twice, in any spelling JSON allows.
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(body), &m) == nil && m != nil {
			n, twice := members([]byte(body)), erp.Repeated([]byte(body), false)
			_, named := m[twice]
			if n < len(m) || n > len(m) && !named || n == len(m) && twice != "" {
				t.Fatalf("%d members, %d names, %q given twice", n, len(m), twice)
			}
		}
		for _, endpoint := range []Endpoint{ExecuteQuery, Execute} {
			call, refused := c.Parse(endpoint, []byte(body))
			if refused != nil {
				if refused.Message == "" || refused.Code < 1001 {
					t.Fatalf("refusal without a message or code: %+v", refused)
				}
				continue
			}
			for i, p := range call.Op.Params {
				d, ok := call.Args[i].(string)
				if p.Kind != Decimal || !ok {
					continue
				}
				var sent map[string]json.RawMessage
				if err := json.Unmarshal([]byte(body), &sent); err != nil {
					t.Fatal(err)
				}
				raw := strings.Trim(string(sent[p.Name]), `"`)
				a, okA := new(big.Rat).SetString(d)
				b, okB := new(big.Rat).SetString(strings.TrimPrefix(raw, "+"))
				if !okA || !okB || a.Cmp(b) != 0 {
					t.Fatalf("%s %s was passed as %s", p.Name, raw, d)
				}
			}
		}
	})
}

// FuzzParseBatch: any batch either becomes its calls or a refusal with a
// message and the index of the call it is about (-1: the batch as a
// whole), never a panic; a reference names an earlier call.
func FuzzParseBatch(f *testing.F) {
	c, err := LoadFile("../../infra/catalog.demo.json")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		`[{"CLAVE":"Set_Pedido","TERCERO":"800000000","FECHA":"24.11.2026"},{"CLAVE":"Set_Pedido_Linea","NUMERO":{"$from":0,"$field":"NUMERO"},"REFERENCIA":"REF0001","CANTIDAD":"2"}]`,
		`[{"CLAVE":"Get_Referencias","CODIGO":{"$from":0,"$field":"CODIGO"}}]`,
		`[{"CLAVE":"Get_Referencias","CODIGO":{"$from":-1}},{"CLAVE":"Get_Referencias","CODIGO":{"$from":1e3,"$field":""}}]`,
		`[[],{},null,1]`,
		`[]`,
	} {
		f.Add(seed)
	}
	const most = 8
	f.Fuzz(func(t *testing.T, body string) {
		for _, endpoint := range []Endpoint{ExecuteQuery, Execute} {
			calls, at, refused := c.ParseBatch(endpoint, []byte(body), most, nil)
			if refused != nil {
				if refused.Message == "" || refused.Code < 1001 || at < -1 || at >= most {
					t.Fatalf("refusal without a message or code, or about no call (%d): %+v", at, refused)
				}
				continue
			}
			if len(calls) == 0 || len(calls) > most {
				t.Fatalf("%d calls accepted", len(calls))
			}
			for i, call := range calls {
				if call.Op == nil {
					t.Fatalf("call %d has no operation", i)
				}
				call.Fingerprint()
			}
		}
	})
}

// TestEncodeWritesWhatDecodeReads: the file Encode writes (a draft of make
// catalog-from-db) loads as the same operations, and leaves out what is
// unset but keeps a scale of 0.
func TestEncodeWritesWhatDecodeReads(t *testing.T) {
	zero, four, eighteen := 0, 4, 18
	f := File{Comment: "a draft", Operations: []FileOperation{
		{Clave: "Get_X", Endpoint: ExecuteQuery, Procedure: "REST_SELECT_X", Params: []FileParam{
			{Name: "A", MaxChars: 20, Required: true},
			{Comment: "<reviewed> & kept", Name: "B", Kind: Date},
		}, MaxRows: 10},
		{Clave: "Set_X", Endpoint: Execute, Procedure: "REST_INSERT_X", Params: []FileParam{
			{Name: "A", MaxChars: 20, Required: true},
			{Name: "N", Kind: Integer, Bits: 64},
			{Name: "P", Kind: Decimal, Precision: &eighteen, Scale: &four},
			{Name: "Q", Kind: Decimal, Precision: &eighteen, Scale: &zero},
		}, ReadBack: &FileReadBack{Procedure: "REST_SELECT_X", Params: []string{"A"}}},
	}}
	var b strings.Builder
	if err := f.Encode(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"$comment": "<reviewed> & kept"`, `"scale": 0`, "\n  \"operations\": ["} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the file lacks %s:\n%s", want, b.String())
		}
	}
	for _, unset := range []string{`"$schema"`, `"format"`, `"max_rows": 0`, `"bits": 0`} {
		if strings.Contains(b.String(), unset) {
			t.Errorf("the file has %s:\n%s", unset, b.String())
		}
	}
	c, err := Decode([]byte(b.String()))
	if err != nil {
		t.Fatalf("%v:\n%s", err, b.String())
	}
	got, want := c.ops["Set_X"], &Operation{Clave: "Set_X", Endpoint: Execute, Procedure: "REST_INSERT_X", MaxRows: DefaultMaxRows,
		Params: []Param{{Name: "A", Kind: Text, MaxLen: 20, Required: true}, {Name: "N", Kind: Integer, Bits: 64},
			{Name: "P", Kind: Decimal, Precision: 18, Scale: 4}, {Name: "Q", Kind: Decimal, Precision: 18}},
		ReadBack: &ReadBack{Procedure: "REST_SELECT_X", Params: []string{"A"}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", got, want)
	}
	if c.ops["Get_X"].MaxRows != 10 || c.ops["Get_X"].Params[1].Format != "DD.MM.YYYY" {
		t.Fatalf("Get_X decoded as %+v", c.ops["Get_X"])
	}
}
