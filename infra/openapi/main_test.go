package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/openapi"
)

// The official OpenAPI 3.1 schema (https://spec.openapis.org/oas/3.1/schema/2022-10-07),
// as a module on the Go proxy ships it; go mod download verifies its checksum.
const (
	schemaModule = "github.com/pb33f/libopenapi@v0.42.3"
	schemaFile   = "datamodel/schemas/oas31-schema.json"
)

func testOptions() options {
	return options{catalog: "../catalog.demo.json", readme: "../../README.md,../../infra/docs/catalog.md", class: "TServiceRestInterface", server: "http://127.0.0.1:3000"}
}

func generated(t *testing.T) []byte {
	t.Helper()
	doc, err := document(context.Background(), testOptions(), fbtest.Demo(t))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestCommittedDocumentIsCurrent(t *testing.T) {
	committed, err := os.ReadFile("../openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(generated(t), committed) {
		t.Fatal("infra/openapi.json is stale: run make openapi and commit it")
	}
}

func officialSchema(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", schemaModule).Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v", schemaModule, err)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		t.Fatalf("go mod download %s: %s", schemaModule, out)
	}
	return filepath.Join(m.Dir, schemaFile)
}

func TestDocumentValidatesAgainstTheOpenAPI31Schema(t *testing.T) {
	c := jsonschema.NewCompiler()
	s, err := c.Compile(officialSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(generated(t)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(doc); err != nil {
		t.Fatal(err)
	}
	// And a document that is not OpenAPI 3.1 fails it.
	bad, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"openapi":"3.0.3","info":{"title":"x"},"paths":{}}`))
	if s.Validate(bad) == nil {
		t.Fatal("the schema accepts a 3.0 document without a version")
	}
}

// Every README example's request and answer validate against the schemas
// the document gives their operation.
func TestREADMEExamplesFitTheDocument(t *testing.T) {
	raw := generated(t)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("https://erp-gateway.example/openapi.json", doc); err != nil {
		t.Fatal(err)
	}
	schema := func(name string) *jsonschema.Schema {
		s, err := c.Compile("https://erp-gateway.example/openapi.json#/components/schemas/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	examples := openapi.ExamplesFromREADME(fbtest.Docs(t, "../.."))
	if len(examples) < 10 {
		t.Fatalf("%d examples", len(examples))
	}
	value := func(s string) any {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		return v
	}
	batches := 0
	for _, ex := range examples {
		// A batch, its references included, is a body of its endpoint.
		if ex.Status == 200 && strings.HasPrefix(strings.TrimSpace(ex.Request), "[") {
			batches++
			if err := schema("Request." + string(ex.Endpoint)).Validate(value(ex.Request)); err != nil {
				t.Errorf("batch %s: %v", ex.Request, err)
			}
			continue
		}
		var req struct{ CLAVE string }
		if json.Unmarshal([]byte(ex.Request), &req) != nil || req.CLAVE == "" {
			continue
		}
		if ex.Status == 200 {
			if err := schema(req.CLAVE + ".request").Validate(value(ex.Request)); err != nil {
				t.Errorf("request %s: %v", ex.Request, err)
			}
		}
		answer := schema(req.CLAVE + ".answer")
		if strings.Contains(ex.Answer, `"ex_execsql"`) {
			answer = schema("DatabaseRefusal")
			if ex.Status != 200 {
				answer = schema("Refusal")
			}
		}
		if err := answer.Validate(value(ex.Answer)); err != nil {
			t.Errorf("answer to %s: %v", ex.Request, err)
		}
	}
	if batches == 0 {
		t.Error("no batch among the README's examples")
	}
	// An optional field sent as null, which a single call may send too.
	if err := schema("Request.execute").Validate(value(`[{"CLAVE":"Set_Pedido","TERCERO":"1","FECHA":"24.11.2026","NOTA":null}]`)); err != nil {
		t.Errorf("a batch with a null: %v", err)
	}
}

// TestAnswersFitTheirResponses: answers validate against the response
// schema of their operation as a client's validator reads it (an empty read
// answer included), every response names its headers, and routing
// refusals stand apart from the operations, where they cannot happen.
func TestAnswersFitTheirResponses(t *testing.T) {
	raw := generated(t)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	const url = "https://erp-gateway.example/openapi.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	pointer := func(path, method, status string) string {
		esc := strings.NewReplacer("~", "~0", "/", "~1", "{", "%7B", "}", "%7D")
		return "#/paths/" + esc.Replace(path) + "/" + method + "/responses/" + status + "/content/application~1json/schema"
	}
	read := "/{instance}/RestServerIsapi.dll/api/v1/{class}/executequery"
	tests := []struct{ path, method, status, answer string }{
		{read, "post", "200", `{"cod_error":0,"data":[]}`},
		{read, "post", "200", `{"cod_error":0,"ex_execsql":"[firebirdsql]exception 16\r\nREST_ERROR\r\n***EL TERCERO X NO EXISTE***"}`},
		{read, "post", "503", `{"cod_error":1205,"ex_execsql":"paused"}`},
		{"/{instance}/health", "get", "503", `{"cod_error":1202,"ex_execsql":"the settings cannot be read"}`},
		{"/{instance}/health", "get", "503", `{"cod_error":1201,"status":"unavailable","ex_execsql":"not reachable"}`},
	}
	for _, tt := range tests {
		s, err := c.Compile(url + pointer(tt.path, tt.method, tt.status))
		if err != nil {
			t.Fatal(err)
		}
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(tt.answer))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(v); err != nil {
			t.Errorf("%s %s %s %s: %v", tt.method, tt.path, tt.status, tt.answer, err)
		}
	}

	var d struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Headers map[string]any `json:"headers"`
			} `json:"responses"`
		} `json:"paths"`
		Components struct {
			Responses map[string]struct {
				Headers map[string]any `json:"headers"`
			} `json:"responses"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Paths["/{instance}/openapi.json"]["get"]; !ok {
		t.Error("GET /{instance}/openapi.json is not described")
	}
	for path, methods := range d.Paths {
		for method, op := range methods {
			for status, r := range op.Responses {
				if status == "404" || status == "405" {
					t.Errorf("%s %s lists %s, which it cannot answer", method, path, status)
				}
				want := map[string][]string{"401": {"WWW-Authenticate"}, "409": {"Retry-After"}, "503": {"Retry-After"}, "429": {"Retry-After"}}[status]
				for _, h := range append(want, "X-Request-Id", "Cache-Control") {
					if r.Headers[h] == nil {
						t.Errorf("%s %s %s does not describe %s", method, path, status, h)
					}
				}
			}
		}
	}
	if d.Components.Responses["MethodNotAllowed"].Headers["Allow"] == nil || d.Components.Responses["NotFound"].Headers == nil {
		t.Errorf("routing refusals: %+v", d.Components.Responses)
	}
}
