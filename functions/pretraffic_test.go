package functions_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/awstest"
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/pretraffic"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// TestPreTrafficHook runs the hook binary under the emulated Runtime API as
// CodeDeploy would, with the real SDK against a CodeDeploy endpoint and a
// Lambda endpoint whose "new versions" are the real executequery and execute
// binaries (the demo catalog built in) on the demo database. The hook
// invokes only the version it was given, and reports Succeeded only when
// every answer is well formed.
func TestPreTrafficHook(t *testing.T) {
	const demoCatalog = "../infra/catalog.demo.json"
	const (
		readsARN  = "arn:aws:lambda:us-east-1:123456789012:function:erp-gateway-ExecuteQueryFunction:7"
		writesARN = "arn:aws:lambda:us-east-1:123456789012:function:erp-gateway-ExecuteFunction:7"
		brokenARN = "arn:aws:lambda:us-east-1:123456789012:function:erp-gateway-ExecuteQueryFunction:8"
	)
	frozen := fbtest.Demo(t)
	frozen.Port = frozenListener(t)
	instances, err := json.Marshal(map[string]tenants.Instance{"demo": {Connection: fbtest.Demo(t)}, "frozen": {Connection: frozen}})
	if err != nil {
		t.Fatal(err)
	}
	keys, accessDoc := fbtest.Access(t) // no anonymous instance: the hook needs its token
	fnEnv := []string{"GATEWAY_INSTANCES_JSON=" + string(instances), "GATEWAY_ACCESS_JSON=" + string(accessDoc), "GATEWAY_DB_TIMEOUT=300ms"}

	versions := map[string]*runtimeAPI{}
	for arn, dir := range map[string]string{readsARN: "executequery", writesARN: "execute"} {
		api, srv := newRuntimeAPI(t)
		env := fnEnv
		if dir == "executequery" {
			// As the template deploys it: its answers in the streaming
			// format, which a plain Invoke returns as they were written.
			env = append(env[:len(env):len(env)], "GATEWAY_RESPONSE_STREAMING=true")
		}
		startBootstrap(t, buildBootstrapWith(t, dir, demoCatalog), strings.TrimPrefix(srv.URL, "http://"), env...)
		versions[arn] = api
	}
	lambdaAPI := awstest.StartLambda(t, func(name string, payload []byte) ([]byte, string) {
		if name == brokenARN {
			return []byte(`{"errorMessage":"runtime exited","errorType":"Runtime.ExitError"}`), "Unhandled"
		}
		api, ok := versions[name]
		if !ok {
			return []byte(`{"errorMessage":"no such version"}`), "Unhandled"
		}
		res := api.invokeRaw(payload)
		if res.isError {
			return res.body, "Unhandled"
		}
		return res.payload(), ""
	})
	codeDeploy := awstest.StartCodeDeploy(t)
	awsEnv := awstest.Env()
	awsEnv["AWS_ENDPOINT_URL_LAMBDA"] = lambdaAPI.URL
	awsEnv["AWS_ENDPOINT_URL_CODEDEPLOY"] = codeDeploy.URL
	hookBinary := buildBootstrapWith(t, "pretraffic", demoCatalog)

	cat, err := catalog.LoadFile(demoCatalog)
	if err != nil {
		t.Fatal(err)
	}
	reads := len(pretraffic.Probes(cat, catalog.ExecuteQuery))

	// What make deploy mints for the hooks: read-only, short-lived.
	token := func(instance string, expires time.Time) string {
		tok, _, err := keys.Mint(instance, erp.Limits{ReadOnly: true, Expires: expires})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	soon := time.Now().Add(time.Hour)
	tests := []struct {
		name, endpoint, target, instance string
		token                            string
		want                             string
		invocations                      int
	}{
		{"reads on the demo database", "executequery", readsARN, "demo", token("demo", soon), "Succeeded", reads},
		{"execute never writes: one refused request", "execute", writesARN, "demo", token("demo", soon), "Succeeded", 1},
		// Without an instance the version still has to start and
		// refuse a stranger.
		{"no instance named: a stranger refused", "executequery", readsARN, "", "", "Succeeded", 1},
		{"no instance named, a new version that crashes", "execute", brokenARN, "", "", "Failed", 1},
		{"a new version that crashes", "executequery", brokenARN, "demo", token("demo", soon), "Failed", reads},
		{"a database that does not answer", "executequery", readsARN, "frozen", token("frozen", soon), "Failed", reads},
		{"an instance the token cannot open", "executequery", readsARN, "nosuch", token("nosuch", soon), "Failed", reads},
		{"a token of another instance", "executequery", readsARN, "demo", token("frozen", soon), "Failed", reads},
		{"the token of a past deployment", "executequery", readsARN, "demo", token("demo", time.Now().Add(-time.Minute)), "Failed", reads},
		{"no token: fails at once", "executequery", readsARN, "demo", "", "Failed", 0},
		{"a hook set up wrong reports at once", "bogus", readsARN, "demo", token("demo", soon), "Failed", 0},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := []string{"GATEWAY_HOOK_ENDPOINT=" + tt.endpoint, "GATEWAY_HOOK_TARGET=" + tt.target,
				"GATEWAY_HOOK_INSTANCE=" + tt.instance, "GATEWAY_HOOK_TOKEN=" + tt.token}
			for k, v := range awsEnv {
				env = append(env, k+"="+v)
			}
			hook, srv := newRuntimeAPI(t)
			startBootstrap(t, hookBinary, strings.TrimPrefix(srv.URL, "http://"), env...)

			before, verdicts := len(lambdaAPI.Invoked()), len(codeDeploy.Verdicts())
			deployment := fmt.Sprintf("d-TEST%d", i)
			ev := fmt.Sprintf(`{"DeploymentId":%q,"LifecycleEventHookExecutionId":"exec-%d"}`, deployment, time.Now().UnixNano())
			if res := hook.invokeRaw([]byte(ev)); res.isError {
				t.Fatalf("the hook failed instead of reporting: %s", res.body)
			}
			got := codeDeploy.Verdicts()[verdicts:]
			if len(got) != 1 || got[0].DeploymentID != deployment || got[0].Status != tt.want {
				t.Fatalf("verdicts %+v, want one %s for %s", got, tt.want, deployment)
			}
			invoked := lambdaAPI.Invoked()[before:]
			if len(invoked) != tt.invocations || slices.ContainsFunc(invoked, func(n string) bool { return n != tt.target }) {
				t.Fatalf("invoked %v, want %s %d times and nothing else", invoked, tt.target, tt.invocations)
			}
		})
	}
}
