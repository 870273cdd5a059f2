package functions_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
)

// TestEachOutcomeIsLoggedWithItsIdsAndMetrics runs the executequery binary
// under the emulated Runtime API and sends one event per outcome class it can
// meet from outside. Every log line of an event carries the event's API
// Gateway request id and Lambda's; the response carries X-Request-Id; the
// request's line is an Embedded Metric Format document that validates
// against testdata/emf.schema.json with the right dimension values.
func TestEachOutcomeIsLoggedWithItsIdsAndMetrics(t *testing.T) {
	schema, err := jsonschema.NewCompiler().Compile("testdata/emf.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	frozen := fbtest.Demo(t)
	frozen.Port = frozenListener(t)
	env := inline(t, map[string]erp.Connection{"frozen": frozen})
	env["GATEWAY_DB_TIMEOUT"] = "300ms"
	api, srv := newRuntimeAPI(t)
	_, cmd := startBootstrapCmd(t, buildBootstrap(t, "executequery"), strings.TrimPrefix(srv.URL, "http://"), environ(env)...)
	logs := cmd.Stdout.(*lockedBuffer)

	frozenPath := strings.Replace(apiPath, "demo", "frozen", 1)
	tests := []struct {
		outcome, path, body string
		edit                func(*events.APIGatewayProxyRequest)
		operation, instance string
	}{
		{"ok", apiPath, `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`, nil, "Get_Referencias", "demo"},
		{"not_found_or_refused_by_db", apiPath, `{"CLAVE":"Get_Referencias","CODIGO":"NADA"}`, nil, "Get_Referencias", "demo"},
		{"client_error", apiPath, `{"CLAVE":"Get_Nada"}`, nil, "-", "demo"},
		{"unauthorized", apiPath, `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`, func(e *events.APIGatewayProxyRequest) {
			e.MultiValueHeaders["Authorization"] = []string{"Bearer a", "Bearer b"}
		}, "-", "-"},
		{"unavailable", frozenPath, `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`, nil, "Get_Referencias", "frozen"},
	}
	for i, tt := range tests {
		t.Run(tt.outcome, func(t *testing.T) {
			id := fmt.Sprintf("api-req-%d-%d", i, time.Now().UnixNano())
			ev := restEvent(t, tt.path+"executequery", tt.body, func(e *events.APIGatewayProxyRequest) {
				e.RequestContext.RequestID = id
				if tt.edit != nil {
					tt.edit(e)
				}
			})
			resp, res := api.invoke(ev)
			if res.isError {
				t.Fatalf("function error %s", res.body)
			}
			if got := resp.MultiValueHeaders["X-Request-Id"]; len(got) != 1 || got[0] != id {
				t.Fatalf("X-Request-Id %v, want %s", got, id)
			}
			line := requestLine(t, logs, id)
			for _, l := range linesOf(t, logs.String(), id) {
				if l["request_id"] != id || l["lambda_request_id"] == "" || l["lambda_request_id"] == nil {
					t.Fatalf("a line without the ids: %v", l)
				}
			}
			raw, _ := json.Marshal(line)
			doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
			if err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(doc); err != nil {
				t.Fatalf("not EMF: %v\n%s", err, raw)
			}
			checkReferences(t, line)
			if line["Outcome"] != tt.outcome || line["Operation"] != tt.operation || line["Instance"] != tt.instance {
				t.Fatalf("dimensions %v %v %v, want %s %s %s", line["Outcome"], line["Operation"], line["Instance"], tt.outcome, tt.operation, tt.instance)
			}
			if tt.outcome == "unauthorized" && (line["source_ip"] == "" || line["source_ip"] == nil || line["instance_asked"] != "demo") {
				t.Fatalf("a refusal's line without the source address and the name asked for: %s", raw)
			}
		})
	}
}

// linesOf returns the JSON log lines that mention id.
func linesOf(t *testing.T, logs, id string) []map[string]any {
	var out []map[string]any
	for _, l := range strings.Split(logs, "\n") {
		if !strings.Contains(l, id) {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("a log line that is not JSON: %s", l)
		}
		out = append(out, m)
	}
	return out
}

// checkReferences checks what the EMF schema cannot: every dimension named
// is a top-level string, every metric a top-level number.
func checkReferences(t *testing.T, line map[string]any) {
	t.Helper()
	aws := line["_aws"].(map[string]any)
	for _, d := range aws["CloudWatchMetrics"].([]any) {
		directive := d.(map[string]any)
		for _, set := range directive["Dimensions"].([]any) {
			for _, name := range set.([]any) {
				if v, ok := line[name.(string)].(string); !ok || v == "" {
					t.Fatalf("dimension %s is not a top-level string: %v", name, line[name.(string)])
				}
			}
		}
		for _, m := range directive["Metrics"].([]any) {
			name := m.(map[string]any)["Name"].(string)
			if _, ok := line[name].(float64); !ok {
				t.Fatalf("metric %s is not a top-level number: %v", name, line[name])
			}
		}
	}
}

// TestSideCountersCountWhatEachRequestCost runs the executequery binary with
// the real SDK against a Secrets Manager that counts its calls: the first
// request to an instance reads its secret, opens a connection and prepares
// its statement, and says so in its metrics; a repeat costs nothing of that;
// another operation prepares its own statement, and one with a BLOB two (the
// plain SELECT, whose description shows the BLOB, then the SELECT with the
// BLOB in the row), and its repeat none; a refusal costs nothing.
func TestSideCountersCountWhatEachRequestCost(t *testing.T) {
	sm, doc, env := acmeInSecretsManager(t)
	api, srv := newRuntimeAPI(t)
	_, cmd := startBootstrapCmd(t, buildBootstrap(t, "executequery"), strings.TrimPrefix(srv.URL, "http://"), env...)
	logs := cmd.Stdout.(*lockedBuffer)
	acme := strings.Replace(apiPath, "demo", "acme", 1) + "executequery"
	token := fbtest.Token(t, doc, "acme")

	tests := []struct {
		name, token, body        string
		secrets, opens, prepares float64
		status                   int
	}{
		{"first request", token, `{"CLAVE":"Get_Terceros","CODIGO":"800000000"}`, 1, 1, 1, 200},
		{"the same again", token, `{"CLAVE":"Get_Terceros","CODIGO":"800000000"}`, 0, 0, 0, 200},
		{"another operation, with a BLOB", token, `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`, 0, 0, 2, 200},
		{"that one again", token, `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`, 0, 0, 0, 200},
		{"a wrong token", token + "x", `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`, 0, 0, 0, 401},
	}
	for i, tt := range tests {
		id := fmt.Sprintf("cost-%d-%d", i, time.Now().UnixNano())
		before := sm.Calls(secretsPrefix + "acme")
		resp, res := api.invoke(restEvent(t, acme, tt.body, func(e *events.APIGatewayProxyRequest) {
			e.RequestContext.RequestID = id
			e.MultiValueHeaders["Authorization"] = []string{"Bearer " + tt.token}
		}))
		if res.isError || resp.StatusCode != tt.status {
			t.Fatalf("%s: %d %s %s", tt.name, resp.StatusCode, resp.Body, res.body)
		}
		line := requestLine(t, logs, id)
		got := []any{line["SecretFetches"], line["ConnectionOpens"], line["StatementPrepares"]}
		if want := []any{tt.secrets, tt.opens, tt.prepares}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: secret fetches, connection opens, prepares = %v, want %v", tt.name, got, want)
		}
		if calls := sm.Calls(secretsPrefix+"acme") - before; float64(calls) != tt.secrets {
			t.Errorf("%s: Secrets Manager saw %d reads of the instance's secret, the metric says %v", tt.name, calls, tt.secrets)
		}
	}

	// The health check reads the system tables on an attachment of its own,
	// in its request's time: that is counted too.
	id := fmt.Sprintf("cost-health-%d", time.Now().UnixNano())
	resp, res := api.invoke(restEvent(t, "/acme/health", "", func(e *events.APIGatewayProxyRequest) {
		e.HTTPMethod, e.Resource, e.RequestContext.RequestID = "GET", "/{instance}/health", id
		e.PathParameters = map[string]string{"instance": "acme"}
		e.MultiValueHeaders["Authorization"] = []string{"Bearer " + token}
	}))
	if res.isError || resp.StatusCode != 200 {
		t.Fatalf("health: %d %s %s", resp.StatusCode, resp.Body, res.body)
	}
	line := requestLine(t, logs, id)
	procedures := float64(len(catalog.Default().Procedures()))
	if opens, prepares := line["ConnectionOpens"], line["StatementPrepares"].(float64); opens != 1.0 || prepares < procedures {
		t.Errorf("health: connection opens %v, prepares %v; want 1 and at least one per procedure (%v)", opens, prepares, procedures)
	}
}

// requestLine waits for the request line of the request id.
func requestLine(t *testing.T, logs *lockedBuffer, id string) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if lines := linesOf(t, logs.String(), id); len(lines) > 0 && lines[len(lines)-1]["msg"] == "request" {
			return lines[len(lines)-1]
		}
	}
	t.Fatalf("no request line for %s in:\n%s", id, logs)
	return nil
}
