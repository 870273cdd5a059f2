package functions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/lambdafn"
	"github.com/erp-gateway/gateway/shared/settings"
)

// The tests here hold the template to the code: the routes the handler
// serves, the error codes, the metrics it writes, the environment it reads,
// and to the README where it describes the template. What CloudFormation
// creates from the template is in translated_test.go.

// tplAt walks maps by key and lists by index; nil where the path leads nowhere.
func tplAt(v any, path ...any) any {
	for _, step := range path {
		switch s := step.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[s]
		case int:
			l, ok := v.([]any)
			if !ok || s >= len(l) {
				return nil
			}
			v = l[s]
		}
	}
	return v
}

// tplList is v as a list (none for nil): IAM takes one action or resource
// alone or in a list.
func tplList(v any) []any {
	if l, ok := v.([]any); ok || v == nil {
		return l
	}
	return []any{v}
}

func tplSame(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s is %#v, want %#v", what, got, want)
	}
}

// builtBy maps each function of the template to the command its Makefile
// target builds (sam build runs build-<function>, which may share its rule).
func builtBy(t *testing.T, s *cfnStack) map[string]string {
	t.Helper()
	makefile, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for fn := range s.ofType("AWS::Lambda::Function") {
		target := regexp.MustCompile(`(?m)^(?:[\w-]+ )*build-` + fn + `(?: [\w-]+)*:.*\n\t.*-o \$\(ARTIFACTS_DIR\)/bootstrap \./functions/(\w+)$`).FindSubmatch(makefile)
		if target == nil {
			t.Fatalf("%s: no Makefile target build-%s building ./functions/<command>", fn, fn)
		}
		out[fn] = string(target[1])
	}
	return out
}

// TestTemplateRoutesAreTheHandlers: the API's routes are the ones each
// function's handler serves, each integrated with its function's alias, and
// every route takes an API key when RequireApiKey is on (a route left out of
// the definition would take none). A route streams (STREAM, through
// response-streaming-invocations) exactly when its function writes the
// streaming format (GATEWAY_RESPONSE_STREAMING). The hooks serve no route.
func TestTemplateRoutesAreTheHandlers(t *testing.T) {
	for i, s := range translate(t, map[string]string{}, map[string]string{"RequireApiKey": "true"}) {
		built := builtBy(t, s)
		want := map[string]string{}
		for fn, command := range built {
			if strings.Contains(fn, "Hook") {
				if e := catalog.Endpoint(command); e == catalog.ExecuteQuery || e == catalog.Execute {
					t.Errorf("%s builds the %s function, not a hook", fn, e)
				}
				continue
			}
			for _, r := range gateway.New(gateway.Config{Endpoints: []catalog.Endpoint{catalog.Endpoint(command)}}, catalog.Default(), nil, nil, nil, nil).Routes() {
				want[r] = fn
			}
		}
		got := map[string]string{}
		for path, methods := range mapOf(tplAt(s.resources, "Api", "Properties", "Body", "paths")) {
			for method, op := range mapOf(methods) {
				route := strings.ToUpper(method) + " " + path
				uri, _ := tplAt(op, "x-amazon-apigateway-integration", "uri").(string)
				streams := tplAt(op, "x-amazon-apigateway-integration", "responseTransferMode") == "STREAM"
				prefix, suffix := "arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/ref(", "Aliaslive)/invocations"
				if streams {
					prefix, suffix = "arn:aws:apigateway:us-east-1:lambda:path/2021-11-15/functions/ref(", "Aliaslive)/response-streaming-invocations"
				}
				fn, ok := strings.CutSuffix(strings.TrimPrefix(uri, prefix), suffix)
				if !ok || !strings.HasPrefix(uri, prefix) {
					t.Errorf("%s: integration %s (streams: %v)", route, uri, streams)
				}
				if writes := tplAt(s.resources, fn, "Properties", "Environment", "Variables", "GATEWAY_RESPONSE_STREAMING") == "true"; writes != streams {
					t.Errorf("%s: the integration streams: %v; %s writes the streaming format: %v", route, streams, fn, writes)
				}
				got[route] = fn
				if streams && strings.HasSuffix(route, "/executequery") {
					// A streamed read may take GATEWAY_STREAM_TIMEOUT: the
					// function and the integration must wait longer.
					fnTimeout, _ := tplAt(s.resources, fn, "Properties", "Timeout").(float64)
					integration, _ := tplAt(op, "x-amazon-apigateway-integration", "timeoutInMillis").(float64)
					if time.Duration(fnTimeout)*time.Second < gateway.DefaultStreamTimeout+10*time.Second || integration < fnTimeout*1000 {
						t.Errorf("%s: function timeout %vs, integration timeout %vms; a stream may take %s", route, fnTimeout, integration, gateway.DefaultStreamTimeout)
					}
				} else if fnTimeout, _ := tplAt(s.resources, fn, "Properties", "Timeout").(float64); time.Duration(fnTimeout)*time.Second <= max(gateway.DefaultTimeout, gateway.DefaultBatchTimeout)+time.Second {
					// The functions end a request's calls a second before
					// their own deadline; the defaults must fit under it.
					t.Errorf("%s: function timeout %vs leaves no room for a call of %s or a batch of %s", route, fnTimeout, gateway.DefaultTimeout, gateway.DefaultBatchTimeout)
				}
				var key any
				if i == 1 {
					key = []any{map[string]any{"api_key": []any{}}}
				}
				tplSame(t, route+" security", tplAt(op, "security"), key)
			}
		}
		tplSame(t, "routes", got, want)
	}
}

// TestTemplateGatewayResponsesUseTheCatalogCodes holds API Gateway's own
// answers, and WAF's, to the documented error codes and statuses.
func TestTemplateGatewayResponsesUseTheCatalogCodes(t *testing.T) {
	s := translate(t, map[string]string{"WafRateLimit": "100"})[0]
	type answer struct {
		status string // "" keeps API Gateway's own status
		code   erp.Code
	}
	want := map[string]answer{
		"DEFAULT_4XX":       {"", erp.CodeNotFound},
		"REQUEST_TOO_LARGE": {strconv.Itoa(erp.CodeTooLarge.Status()), erp.CodeTooLarge},
		// 415 as API Gateway has it: a Content-Encoding it does not decode.
		"UNSUPPORTED_MEDIA_TYPE": {"", erp.CodeNotObject},
		// A crash or a timeout of the function: a write's outcome is unknown.
		"DEFAULT_5XX":    {"", erp.CodeOutcomeUnknown},
		"THROTTLED":      {strconv.Itoa(erp.CodeThrottled.Status()), erp.CodeThrottled},
		"QUOTA_EXCEEDED": {strconv.Itoa(erp.CodeThrottled.Status()), erp.CodeThrottled},
		// API Gateway's own status for a wrong key, with the code of a
		// wrong token.
		"API_KEY_INVALID": {"403", erp.CodeUnauthorized},
	}
	got := mapOf(tplAt(s.resources, "Api", "Properties", "Body", "x-amazon-apigateway-gateway-responses"))
	tplSame(t, "gateway responses", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	for kind, w := range want {
		body, _ := tplAt(got[kind], "responseTemplates", "application/json").(string)
		if !strings.HasPrefix(body, fmt.Sprintf(`{"cod_error":%d,"ex_execsql":`, w.code)) {
			t.Errorf("%s answers %s, want cod_error %d", kind, body, w.code)
		}
		if status := tplAt(got[kind], "statusCode"); (w.status == "" && status != nil) || (w.status != "" && status != w.status) {
			t.Errorf("%s answers status %v, want %q", kind, status, w.status)
		}
		// As the gateway's own answers: never cached. (API Gateway adds
		// its request id itself, as x-amzn-RequestId; a mapping of
		// context.requestId is not documented for gateway responses.)
		for h, v := range map[string]string{"X-Content-Type-Options": "'nosniff'", "Cache-Control": "'no-store'"} {
			if got := tplAt(got[kind], "responseParameters", "gatewayresponse.header."+h); got != v {
				t.Errorf("%s answers %s %v, want %s", kind, h, got, v)
			}
		}
	}
	// WAF's own answers carry it too.
	for _, r := range tplList(tplAt(s.resources, "WebAcl", "Properties", "Rules")) {
		headers := map[string]any{}
		for _, h := range tplList(tplAt(r, "Action", "Block", "CustomResponse", "ResponseHeaders")) {
			headers[fmt.Sprint(tplAt(h, "Name"))] = tplAt(h, "Value")
		}
		if headers["X-Content-Type-Options"] != "nosniff" || headers["Cache-Control"] != "no-store" {
			t.Errorf("WAF rule %v answers without nosniff or no-store: %v", tplAt(r, "Name"), headers)
		}
	}
	// One answer for "too many requests", whoever refuses.
	tplSame(t, "WAF's 429", tplAt(s.resources, "WebAcl", "Properties", "CustomResponseBodies", "TooManyRequests", "Content"),
		tplAt(got, "THROTTLED", "responseTemplates", "application/json"))
	// A body near what Lambda can take (6 MB for the whole event) is
	// refused as too large, by its declared length, where API Gateway
	// would answer its 5xx (1204); first, before a rate rule counts it.
	for _, r := range tplList(tplAt(s.resources, "WebAcl", "Properties", "Rules")) {
		if tplAt(r, "Name") != "BodyTooLarge" {
			continue
		}
		key, _ := tplAt(r, "Action", "Block", "CustomResponse", "CustomResponseBodyKey").(string)
		body, _ := tplAt(s.resources, "WebAcl", "Properties", "CustomResponseBodies", key, "Content").(string)
		if status := tplAt(r, "Action", "Block", "CustomResponse", "ResponseCode"); fmt.Sprint(status) != strconv.Itoa(erp.CodeTooLarge.Status()) ||
			!strings.HasPrefix(body, fmt.Sprintf(`{"cod_error":%d,`, erp.CodeTooLarge)) {
			t.Errorf("BodyTooLarge answers %v %s", status, body)
		}
		re := regexp.MustCompile(tplAt(r, "Statement", "RegexMatchStatement", "RegexString").(string))
		if fmt.Sprint(tplAt(r, "Priority")) != "0" {
			t.Errorf("BodyTooLarge has priority %v, want 0", tplAt(r, "Priority"))
		}
		for length, refused := range map[string]bool{"0": false, "65536": false, "1048576": false, "1999999": false, "2000000": true, "5999999": true, "10000000": true, "0002000000": true, "200000": false} {
			if re.MatchString(length) != refused {
				t.Errorf("Content-Length %s: refused %v, want %v", length, !refused, refused)
			}
		}
		return
	}
	t.Error("no WAF rule BodyTooLarge")
}

// handlerMetrics is the EMF document of one request as the executequery
// handler writes it: metric names by dimension set.
func handlerMetrics(t *testing.T) map[string][]string {
	t.Helper()
	var logs bytes.Buffer
	env := inline(t, nil)
	env["GATEWAY_METRICS_NAMESPACE"] = "Test"
	fn, err := lambdafn.New(context.Background(), catalog.ExecuteQuery, "", fbtest.Settings(t, env), slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer fn.Close()
	logs.Reset() // the start's line; the request's follows
	if _, err := fn.Handle(context.Background(), restEvent(t, apiPath+"executequery", `{"CLAVE":"Get_Nada"}`, nil)); err != nil {
		t.Fatal(err)
	}
	var line struct {
		AWS struct {
			CloudWatchMetrics []struct {
				Dimensions [][]string
				Metrics    []struct{ Name string }
			}
		} `json:"_aws"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(logs.Bytes()), &line); err != nil {
		t.Fatalf("%v: %s", err, logs.String())
	}
	out := map[string][]string{}
	for _, d := range line.AWS.CloudWatchMetrics {
		for _, m := range d.Metrics {
			out[strings.Join(d.Dimensions[0], ",")] = append(out[strings.Join(d.Dimensions[0], ",")], m.Name)
		}
	}
	return out
}

// TestTemplateMetricsAreTheHandlers: the dashboard shows every metric the
// handler writes by Operation and Outcome, and nothing else of the
// namespace; its latency panels and UnavailableAlarm name outcomes the
// handler writes; every alarm is on it.
func TestTemplateMetricsAreTheHandlers(t *testing.T) {
	written := handlerMetrics(t)["Operation,Outcome"]
	s := translate(t, map[string]string{})[0]
	body, _ := tplAt(s.resources, "Dashboard", "Properties", "DashboardBody").(string)
	var parsed struct{ Widgets []any }
	if err := json.Unmarshal([]byte(body), &parsed); err != nil || len(parsed.Widgets) == 0 {
		t.Fatalf("dashboard body %v: %s", err, body)
	}
	var shown []string
	for _, m := range regexp.MustCompile(`Operation,Outcome\} MetricName=\\"(\w+)\\"`).FindAllStringSubmatch(body, -1) {
		shown = append(shown, m[1])
	}
	tplSame(t, "metrics on the dashboard", slices.Compact(slices.Sorted(slices.Values(shown))), slices.Sorted(slices.Values(written)))
	for _, outcome := range []erp.Outcome{erp.OutcomeOK, erp.OutcomeRefusedByDB} {
		if !strings.Contains(body, `Outcome=\"`+string(outcome)+`\"`) {
			t.Errorf("dashboard latency panels miss outcome %s", outcome)
		}
	}
	for alarm := range s.ofType("AWS::CloudWatch::Alarm") {
		if !strings.Contains(body, "getatt("+alarm+".Arn)") {
			t.Errorf("dashboard does not show %s", alarm)
		}
	}
	query, _ := tplAt(s.resources, "UnavailableAlarm", "Properties", "Metrics", 0, "Expression").(string)
	for _, part := range []string{"SELECT SUM(Requests) FROM", "WHERE Outcome = '" + string(erp.OutcomeUnavailable) + "'", "GROUP BY Operation", "ORDER BY"} {
		if !strings.Contains(query, part) {
			t.Errorf("UnavailableAlarm query %q lacks %q", query, part)
		}
	}
}

// TestTemplateEnvironmentIsWhatTheBinariesRead: every variable the template
// gives a function is read by the code, so none is misspelt.
func TestTemplateEnvironmentIsWhatTheBinariesRead(t *testing.T) {
	var code strings.Builder
	for _, dir := range []string{"../shared", "../functions"} {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
				b, err := os.ReadFile(path)
				code.Write(b)
				return err
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	s := translate(t, map[string]string{})[0]
	for fn := range s.ofType("AWS::Lambda::Function") {
		for name := range mapOf(tplAt(s.resources, fn, "Properties", "Environment", "Variables")) {
			if !strings.Contains(code.String(), `"`+name+`"`) {
				t.Errorf("%s gets %s, which no binary reads", fn, name)
			}
		}
	}
}

// TestTemplateAccessLogIsTheReadmes: the access log is one JSON object a
// line of $context variables, its fields the ones the guide lists
// (infra/docs/operating.md, Logs), and its requestId the X-Request-Id the
// handler answers with.
func TestTemplateAccessLogIsTheReadmes(t *testing.T) {
	s := translate(t, map[string]string{})[0]
	format, _ := tplAt(s.resources, "ApiStage", "Properties", "AccessLogSetting", "Format").(string)
	var fields map[string]string
	if err := json.Unmarshal([]byte(format), &fields); err != nil || strings.ContainsAny(format, "\r\n") {
		t.Fatalf("access log format is not one line of a JSON object of strings (%v): %s", err, format)
	}
	for name, value := range fields {
		if !regexp.MustCompile(`^\$context\.[A-Za-z.]+$`).MatchString(value) {
			t.Errorf("access log field %s is %q, not one $context variable", name, value)
		}
	}
	tplSame(t, "requestId", fields["requestId"], "$context.requestId")
	readme, err := os.ReadFile("../infra/docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	_, list, _ := strings.Cut(string(readme), "**Access log fields:**")
	list, _, _ = strings.Cut(list, "Every value is a")
	var listed []string
	for _, m := range regexp.MustCompile("`(\\w+)`").FindAllStringSubmatch(regexp.MustCompile(`\([^)]*\)`).ReplaceAllString(list, ""), -1) {
		listed = append(listed, m[1])
	}
	slices.Sort(listed)
	tplSame(t, "README's access log fields", listed, slices.Sorted(maps.Keys(fields)))
}

// TestDatabaseTimeoutIsOneTheFunctionsRead: CloudFormation refuses, by the
// parameter's AllowedPattern, exactly the DatabaseTimeout values the
// functions would refuse at every cold start (20 with no unit, say), so a
// deployment never ships a setting that stops them.
func TestDatabaseTimeoutIsOneTheFunctionsRead(t *testing.T) {
	s := translate(t, map[string]string{})[0]
	pattern, _ := tplAt(s.raw, "Parameters", "DatabaseTimeout", "AllowedPattern").(string)
	re, err := regexp.Compile(pattern)
	if pattern == "" || err != nil {
		t.Fatalf("DatabaseTimeout's AllowedPattern %q: %v", pattern, err)
	}
	for v, takes := range map[string]bool{
		"20s": true, "1500ms": true, "0.5s": true, "1.25s": true, "2m": true, "20": false, "20 s": false, "s": false,
		"-5s": false, "": false, "0s": false, "0ms": false, "00s": false, "0.0s": false, "99999999999999h": false,
	} {
		_, err := settings.Read(func(k string) string {
			if k == settings.EnvDBTimeout {
				return v
			}
			return ""
		})
		// Whatever CloudFormation takes, the functions read; the pattern
		// may refuse some they would read (1m30s), never the reverse.
		if got := re.MatchString(v); got != takes || got && (err != nil || v == "") {
			t.Errorf("DatabaseTimeout %q: the template takes it %v (want %v), the functions read it: %v", v, got, takes, err)
		}
	}
}

// TestTemplateDefaultsAreTheFunctions: a variable the template sets from a
// parameter's default reads as the functions' own default, so a setting
// has one default, not one deployed and another run locally. Exempt are
// the variables whose value only the deployment can give.
func TestTemplateDefaultsAreTheFunctions(t *testing.T) {
	given := map[string]string{
		settings.EnvSecretPrefix:      "where the instances' secrets are",
		settings.EnvAccessSecret:      "the access document's secret",
		settings.EnvMetricsNamespace:  "the stack's own namespace",
		settings.EnvResponseStreaming: "whether the function's integration streams",
		settings.EnvSecretSuffix:      "the reads' second secret",
		settings.EnvHookEndpoint:      "the hook's function",
		settings.EnvHookTarget:        "the hook's function",
		settings.EnvHookInstance:      "the hook's instance",
		settings.EnvHookToken:         "the hook's token",
	}
	unset, err := settings.Read(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	s := translate(t, map[string]string{})[0]
	for fn := range s.ofType("AWS::Lambda::Function") {
		for name, v := range mapOf(tplAt(s.resources, fn, "Properties", "Environment", "Variables")) {
			if _, ok := given[name]; ok || v == "" {
				continue
			}
			got, err := settings.Read(func(k string) string {
				if k == name {
					return fmt.Sprint(v)
				}
				return ""
			})
			if err != nil || !reflect.DeepEqual(got, unset) {
				t.Errorf("%s: the template's %s=%v is not the functions' default (%v)", fn, name, v, err)
			}
		}
	}
}
