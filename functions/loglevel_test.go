package functions_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// lambdaLevels are the levels Lambda's log filter knows, lowest first; a JSON
// line without a known "level" counts as INFO.
var lambdaLevels = []string{"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"}

func lambdaLevel(v any) int {
	if i := slices.Index(lambdaLevels, strings.ToUpper(fmt.Sprint(v))); i >= 0 {
		return i
	}
	return slices.Index(lambdaLevels, "INFO")
}

// TestRequestLineAtEveryLogLevel runs the real executequery binary with the
// environment and log filter each allowed LogLevel gives it in the
// translated template, and holds that the request line, the EMF document the
// metrics, UnavailableAlarm and the rollbacks depend on, is written and
// passes Lambda's filter; other lines keep to the level.
func TestRequestLineAtEveryLogLevel(t *testing.T) {
	levels := tplList(tplAt(translate(t, map[string]string{})[0].raw, "Parameters", "LogLevel", "AllowedValues"))
	var sets []map[string]string
	for _, l := range levels {
		sets = append(sets, map[string]string{"LogLevel": l.(string)})
	}
	stacks := translate(t, sets...)
	binary := buildBootstrap(t, "executequery")
	for i, level := range levels {
		t.Run(level.(string), func(t *testing.T) {
			props := tplAt(stacks[i].resources, "ExecuteQueryFunction", "Properties")
			filter, _ := tplAt(props, "LoggingConfig", "ApplicationLogLevel").(string)
			env := inline(t, nil)
			for k, v := range mapOf(tplAt(props, "Environment", "Variables")) {
				if v != "" && strings.HasPrefix(k, "GATEWAY_") && k != "GATEWAY_INSTANCES_JSON" && k != "GATEWAY_ACCESS_JSON" {
					env[k] = v.(string)
				}
			}
			env["AWS_LAMBDA_LOG_LEVEL"] = filter // Lambda sets it from LoggingConfig
			api, srv := newRuntimeAPI(t)
			_, cmd := startBootstrapCmd(t, binary, strings.TrimPrefix(srv.URL, "http://"), environ(env)...)
			logs := cmd.Stdout.(*lockedBuffer)

			id := fmt.Sprintf("level-%s-%d", level, time.Now().UnixNano())
			ev := restEvent(t, "/demo/RestServerIsapi.dll/api/v1/"+env["GATEWAY_CLASS"]+"/executequery", `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`,
				func(e *events.APIGatewayProxyRequest) { e.RequestContext.RequestID = id })
			if resp, res := api.invoke(ev); res.isError || resp.StatusCode != 200 {
				t.Fatalf("answer %d %s", resp.StatusCode, res.body)
			}
			line := requestLine(t, logs, id)
			if line["_aws"] == nil || line["Requests"] != 1.0 {
				t.Errorf("the request line is not the EMF document: %v", line)
			}
			if lambdaLevel(line["level"]) < lambdaLevel(filter) {
				t.Errorf("Lambda (ApplicationLogLevel %s) drops the request line at level %v", filter, line["level"])
			}
			for _, l := range linesOf(t, logs.String(), id) {
				if l["msg"] != "request" && lambdaLevel(l["level"]) < lambdaLevel(level) {
					t.Errorf("at LogLevel %s a line at %v: %v", level, l["level"], l)
				}
			}
		})
	}
}
