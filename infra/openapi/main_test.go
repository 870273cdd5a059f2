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
	return options{catalog: "../catalog.demo.json", readme: "../../README.md", class: "TServiceRestInterface", server: "http://127.0.0.1:3000"}
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
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	examples := openapi.ExamplesFromREADME(readme)
	if len(examples) < 10 {
		t.Fatalf("%d examples", len(examples))
	}
	for _, ex := range examples {
		var req struct{ CLAVE string }
		if json.Unmarshal([]byte(ex.Request), &req) != nil || req.CLAVE == "" {
			continue
		}
		value := func(s string) any {
			v, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
			if err != nil {
				t.Fatalf("%s: %v", s, err)
			}
			return v
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
}
