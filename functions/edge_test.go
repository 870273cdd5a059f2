package functions_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/erp-gateway/gateway/shared/awstest"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// secretsPrefix is where acmeInSecretsManager keeps instance documents.
const secretsPrefix = "erp-gateway/instances/"

// acmeInSecretsManager is a counting Secrets Manager holding a test access
// document and the instance acme (the demo database), and the environment
// that points a function at it.
func acmeInSecretsManager(t testing.TB) (*awstest.SecretsManager, *fbtest.Keys, []string) {
	t.Helper()
	const accessID = "erp-gateway/access"
	sm := awstest.Start(t, false)
	doc, data := fbtest.Access(t)
	sm.Put(accessID, string(data))
	sm.PutJSON(secretsPrefix+"acme", tenants.Instance{Connection: fbtest.Demo(t)})
	env := []string{"GATEWAY_SECRET_PREFIX=" + secretsPrefix, "GATEWAY_ACCESS_SECRET=" + accessID}
	for k, v := range sm.Env() {
		env = append(env, k+"="+v)
	}
	return sm, doc, env
}

// TestStrangersUnderTheRuntimeAPI runs the executequery binary under the
// emulated Runtime API with the real SDK against a counting Secrets Manager
// that takes 15 ms to answer. Requests for random names with well-formed
// tokens make no secret call, and a wrong token is refused as fast for an
// existing, cached instance as for a name that does not exist.
func TestStrangersUnderTheRuntimeAPI(t *testing.T) {
	sm, doc, env := acmeInSecretsManager(t)
	sm.Delay(15 * time.Millisecond)
	api, srv := newRuntimeAPI(t)
	startBootstrap(t, buildBootstrap(t, "executequery"), strings.TrimPrefix(srv.URL, "http://"), env...)

	send := func(instance, token string) (events.APIGatewayProxyResponse, time.Duration) {
		ev := restEvent(t, strings.Replace(apiPath, "demo", instance, 1)+"executequery", `{"CLAVE":"Get_Terceros","CODIGO":"800000000"}`,
			func(e *events.APIGatewayProxyRequest) {
				e.MultiValueHeaders["Authorization"] = []string{"Bearer " + token}
				e.Headers["Authorization"] = "Bearer " + token
			})
		start := time.Now()
		resp, res := api.invoke(ev)
		if res.isError {
			t.Fatalf("function error: %s", res.body)
		}
		return resp, time.Since(start)
	}
	// The instance's document is cached by a first valid request.
	if resp, _ := send("acme", fbtest.Token(t, doc, "acme")); resp.StatusCode != 200 {
		t.Fatalf("acme: %d %s", resp.StatusCode, resp.Body)
	}
	base := sm.Total()

	foreign, _ := fbtest.Access(t)
	randomName := func() string { return fmt.Sprintf("x%016x", rand.Uint64()) }
	// Half the tokens carry limits, so their signature covers more bytes.
	limited := erp.Limits{ReadOnly: true, Claves: []string{"Get_Terceros"}, Expires: time.Now().Add(time.Hour)}
	for i := range 2000 {
		name := randomName()
		token := fbtest.Token(t, foreign, name)
		if i%2 == 1 {
			token, _, _ = foreign.Mint(name, limited)
		}
		if resp, _ := send(name, token); resp.StatusCode != 401 {
			t.Fatalf("%s: %d %s", name, resp.StatusCode, resp.Body)
		}
	}
	if n := sm.Total() - base; n != 0 {
		t.Fatalf("2,000 random names with well-formed tokens made %d secret calls", n)
	}

	// Wrong tokens, interleaved: the existing instance and names that do
	// not exist, in two rounds, so the rounds show the run-to-run noise.
	median := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
	var rounds [2][2]time.Duration
	for r := range rounds {
		var existing, missing []time.Duration
		for range 1000 {
			resp, took := send("acme", fbtest.Token(t, foreign, "acme"))
			if resp.StatusCode != 401 {
				t.Fatalf("acme with a foreign token: %d", resp.StatusCode)
			}
			existing = append(existing, took)
			name := randomName()
			resp, took = send(name, fbtest.Token(t, foreign, name))
			if resp.StatusCode != 401 {
				t.Fatalf("%s: %d", name, resp.StatusCode)
			}
			missing = append(missing, took)
		}
		rounds[r] = [2]time.Duration{median(existing), median(missing)}
		t.Logf("round %d: median 401 for the existing, cached instance %s, for names that do not exist %s", r+1, rounds[r][0], rounds[r][1])
	}
	if n := sm.Total() - base; n != 0 {
		t.Fatalf("%d secret calls", n)
	}
	// Before tokens carried their proof, the names that do not exist cost a
	// secret call each: 15 ms here.
	for _, r := range rounds {
		if diff := (r[0] - r[1]).Abs(); diff > 2*time.Millisecond {
			t.Fatalf("medians differ by %s", diff)
		}
	}
}
