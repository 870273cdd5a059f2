package functions_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"gopkg.in/yaml.v3"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/openapi"
)

// samLocalEnv is the environment infra/env.json gives both functions under
// `sam local start-api`.
func samLocalEnv(t testing.TB) map[string]string {
	t.Helper()
	raw, err := os.ReadFile("../infra/env.json")
	if err != nil {
		t.Fatal(err)
	}
	var env struct{ Parameters map[string]string }
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("infra/env.json: %v", err)
	}
	return env.Parameters
}

// documents decodes an instances file's content to compare documents as data.
func documents(t testing.TB, what string, raw []byte) map[string]map[string]any {
	t.Helper()
	var docs map[string]map[string]any
	if err := json.Unmarshal(raw, &docs); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return docs
}

// TestSamLocalServesTheDemoInstanceOfMakeRun holds infra/env.json to
// infra/instances.demo.json: the same documents, tokens included, but for
// the host, which under Docker is the machine running the containers.
func TestSamLocalServesTheDemoInstanceOfMakeRun(t *testing.T) {
	raw, err := os.ReadFile("../infra/instances.demo.json")
	if err != nil {
		t.Fatal(err)
	}
	want := documents(t, "infra/instances.demo.json", raw)
	got := documents(t, "GATEWAY_INSTANCES_JSON of infra/env.json", []byte(samLocalEnv(t)["GATEWAY_INSTANCES_JSON"]))
	if len(got) != len(want) {
		t.Fatalf("infra/env.json has instances %v, infra/instances.demo.json %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	for name, doc := range want {
		g, ok := got[name]
		if !ok {
			t.Fatalf("infra/env.json lacks instance %s", name)
		}
		if g["host"] != "host.docker.internal" {
			t.Errorf("%s: host %v in infra/env.json, want host.docker.internal", name, g["host"])
		}
		g, doc = maps.Clone(g), maps.Clone(doc)
		delete(g, "host")
		delete(doc, "host")
		gb, _ := json.Marshal(g)
		db, _ := json.Marshal(doc)
		if string(gb) != string(db) {
			t.Errorf("%s differs beyond the host:\n infra/env.json            %s\n infra/instances.demo.json %s", name, gb, db)
		}
	}
	// The demo token opens it under sam local too.
	access, err := os.ReadFile("../infra/access.demo.json")
	if err != nil {
		t.Fatal(err)
	}
	var wantAccess, gotAccess any
	if json.Unmarshal(access, &wantAccess) != nil || json.Unmarshal([]byte(samLocalEnv(t)["GATEWAY_ACCESS_JSON"]), &gotAccess) != nil ||
		!reflect.DeepEqual(gotAccess, wantAccess) {
		t.Errorf("GATEWAY_ACCESS_JSON of infra/env.json is not infra/access.demo.json: %v", gotAccess)
	}
}

// TestREADMEExamplesUnderSamLocalEnvironment replays every curl example of
// the README through the functions built with the environment sam local
// gives them, the demo instance pointed at the test database.
func TestREADMEExamplesUnderSamLocalEnvironment(t *testing.T) {
	readme := fbtest.Docs(t, "..")
	examples := openapi.ExamplesFromREADME(readme)
	if len(examples) < 9 {
		t.Fatalf("found %d examples in the README", len(examples))
	}

	env := samLocalEnv(t)
	docs := documents(t, "infra/env.json", []byte(env["GATEWAY_INSTANCES_JSON"]))
	test := fbtest.Demo(t)
	docs["demo"]["host"], docs["demo"]["database"] = test.Host, test.Database
	inline, err := json.Marshal(docs)
	if err != nil {
		t.Fatal(err)
	}
	env["GATEWAY_INSTANCES_JSON"] = string(inline)
	// make local-api builds the functions with the demo catalog, as make run
	// serves it.
	built := builtCatalog(t, demoCatalog)
	fns := map[string]interface {
		Handle(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error)
	}{
		"executequery": newFunctionWith(t, catalog.ExecuteQuery, built, env),
		"execute":      newFunctionWith(t, catalog.Execute, built, env),
	}
	fbtest.ReadmeStart(t, test)

	for _, ex := range examples {
		auth, p, body, want := ex.Authorization, ex.Path, ex.Request, ex.Answer
		ev := restEvent(t, p, body, func(ev *events.APIGatewayProxyRequest) {
			ev.Headers["Authorization"] = auth
			ev.MultiValueHeaders["Authorization"] = []string{auth}
			for _, h := range ex.Headers {
				name, value, _ := strings.Cut(h, ": ")
				ev.Headers[name] = value
				ev.MultiValueHeaders[name] = append(ev.MultiValueHeaders[name], value)
			}
		})
		resp, err := fns[string(ex.Endpoint)].Handle(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Body != want {
			t.Errorf("POST %s %s\n got  %d %s\n want %s", p, body, resp.StatusCode, resp.Body, want)
		}
	}
}

// TestSamLocalEnvironmentIsDeclared: sam local passes a function only the
// variables of infra/env.json that template.yaml declares.
func TestSamLocalEnvironmentIsDeclared(t *testing.T) {
	raw, err := os.ReadFile("../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var tpl struct {
		Globals struct {
			Function struct {
				Environment struct {
					Variables map[string]yaml.Node `yaml:"Variables"`
				} `yaml:"Environment"`
			} `yaml:"Function"`
		} `yaml:"Globals"`
	}
	if err := yaml.Unmarshal(raw, &tpl); err != nil {
		t.Fatal(err)
	}
	for name := range samLocalEnv(t) {
		if _, ok := tpl.Globals.Function.Environment.Variables[name]; !ok {
			t.Errorf("infra/env.json sets %s, which template.yaml does not declare: sam local would drop it", name)
		}
	}
}
