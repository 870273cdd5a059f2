package functions_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// TestExecuteBootstrapResolvesACutCommitByItsKey: the real execute binary
// under the emulated Runtime API, its connection to Firebird cut at a keyed
// write's commit. It answers 1204; the write sent again with its key answers
// the kept answer when the commit happened, and runs when it did not: one
// third party either way.
func TestExecuteBootstrapResolvesACutCommitByItsKey(t *testing.T) {
	cfg := fbtest.Demo(t)
	fbtest.KeyTable(t, cfg)
	admin := fbtest.Open(t, fbtest.Admin(t, cfg))
	cut := fbtest.CutCommits(t, fmt.Sprintf("%s:%d", cfg.Host, 3050))
	through := cfg
	through.Host, through.Port = "127.0.0.1", cut.Port()
	instances, err := json.Marshal(map[string]tenants.Instance{"demo": {Connection: through, Idempotency: true}})
	if err != nil {
		t.Fatal(err)
	}
	_, acc := fbtest.Access(t, "demo")
	api, srv := newRuntimeAPI(t)
	startBootstrap(t, buildBootstrap(t, "execute"), strings.TrimPrefix(srv.URL, "http://"),
		"GATEWAY_INSTANCES_JSON="+string(instances), "GATEWAY_ACCESS_JSON="+string(acc))

	write := func(code, key string) events.APIGatewayProxyResponse {
		t.Helper()
		resp, res := api.invoke(restEvent(t, apiPath+"execute", fbtest.SetTerceros(code, "Corte"), func(ev *events.APIGatewayProxyRequest) {
			ev.Headers["Idempotency-Key"] = key
			ev.MultiValueHeaders["Idempotency-Key"] = []string{key}
		}))
		if res.isError {
			t.Fatalf("invocation error: %s", res.body)
		}
		return resp
	}
	for _, tt := range []struct {
		name      string
		after     bool
		committed int
	}{{"cut after the commit was sent", true, 1}, {"cut before the commit was sent", false, 0}} {
		t.Run(tt.name, func(t *testing.T) {
			code := fmt.Sprintf("L%d", time.Now().UnixNano()%1e12)
			// A warm connection, its statements prepared.
			if r := write("W"+code, "warm-"+code); r.StatusCode != 200 {
				t.Fatalf("warm-up: %+v", r)
			}
			cut.Arm(tt.after)
			first := write(code, "k-"+code)
			if first.StatusCode != 503 || !strings.Contains(first.Body, fmt.Sprintf(`"cod_error":%d`, erp.CodeOutcomeUnknown)) {
				t.Fatalf("cut at the commit: %+v", first)
			}
			if n := fbtest.ThirdParties(t, admin, code); n != tt.committed {
				t.Fatalf("%d third parties after the cut, want %d", n, tt.committed)
			}
			var again events.APIGatewayProxyResponse
			for range 50 { // until the server has seen the cut connection go
				if again = write(code, "k-"+code); again.StatusCode != 409 && again.StatusCode != 503 {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			replayed := again.MultiValueHeaders["Idempotent-Replayed"]
			if again.StatusCode != 200 || !strings.HasPrefix(again.Body, `{"cod_error":0,"data":[{"CODIGO":"`+code+`"`) ||
				(tt.committed == 1) != (len(replayed) == 1 && replayed[0] == "true") {
				t.Fatalf("sent again: %+v", again)
			}
			if n := fbtest.ThirdParties(t, admin, code); n != 1 {
				t.Fatalf("%d third parties, want exactly 1", n)
			}
		})
	}
	if cut.Cuts() != 2 {
		t.Fatalf("%d commits cut, want 2", cut.Cuts())
	}
}
