package functions_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/erp-gateway/gateway/shared/access"
	"github.com/erp-gateway/gateway/shared/awstest"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// The access document's bounds in these tests, in place of 5 minutes and
// 1 hour.
const (
	testRefresh = time.Second
	testMaxAge  = 4 * time.Second
)

// accessDoc is an access document holding the public keys of signers.
func accessDoc(t *testing.T, signers ...*access.Signer) string {
	t.Helper()
	keys := map[string]string{}
	for _, s := range signers {
		keys[s.KeyID()] = s.PublicKey()
	}
	data, err := json.Marshal(map[string]any{"keys": keys})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := access.Parse(data); err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func newSigner(t *testing.T, id string) *access.Signer {
	t.Helper()
	s, err := access.NewSigner(id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// accessBootstrap is the executequery binary under the emulated Runtime API,
// reading its access document from sm every testRefresh and trusting a read
// for testMaxAge; send invokes it with a token.
func accessBootstrap(t *testing.T, sm *awstest.SecretsManager) (send func(token string) events.APIGatewayProxyResponse) {
	t.Helper()
	env := []string{"GATEWAY_SECRET_PREFIX=" + secretsPrefix, "GATEWAY_ACCESS_SECRET=erp-gateway/access",
		"GATEWAY_ACCESS_REFRESH=" + testRefresh.String(), "GATEWAY_ACCESS_MAX_AGE=" + testMaxAge.String()}
	for k, v := range sm.Env() {
		env = append(env, k+"="+v)
	}
	api, srv := newRuntimeAPI(t)
	startBootstrap(t, buildBootstrap(t, "executequery"), strings.TrimPrefix(srv.URL, "http://"), env...)
	return func(token string) events.APIGatewayProxyResponse {
		ev := restEvent(t, strings.Replace(apiPath, "demo", "acme", 1)+"executequery", `{"CLAVE":"Get_Terceros","CODIGO":"800000000"}`,
			func(e *events.APIGatewayProxyRequest) {
				e.MultiValueHeaders["Authorization"] = []string{"Bearer " + token}
				e.Headers["Authorization"] = "Bearer " + token
			})
		resp, res := api.invoke(ev)
		if res.isError {
			t.Fatalf("function error: %s", res.body)
		}
		return resp
	}
}

func codeOf(resp events.APIGatewayProxyResponse) erp.Code {
	var body struct {
		Code erp.Code `json:"cod_error"`
	}
	json.Unmarshal([]byte(resp.Body), &body) //nolint:errcheck // a body without a code is code 0, and fails the test
	return body.Code
}

// TestKeyRemovalHasABoundUnderTheRuntimeAPI: a key is removed from the
// access document at the moment Secrets Manager stops answering. The real
// bootstrap keeps its last good document for at most its stated age, then
// refuses every token with 503/1206 (no token works on a document it cannot
// trust), and serves the new document as soon as Secrets Manager answers.
func TestKeyRemovalHasABoundUnderTheRuntimeAPI(t *testing.T) {
	oldKey, newKey := newSigner(t, "old"), newSigner(t, "new")
	before, after := accessDoc(t, oldKey, newKey), accessDoc(t, newKey)
	oldToken, _, err := oldKey.Mint("acme", erp.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	newToken, _, err := newKey.Mint("acme", erp.Limits{})
	if err != nil {
		t.Fatal(err)
	}

	sm := awstest.Start(t, false)
	sm.Put("erp-gateway/access", before)
	sm.PutJSON(secretsPrefix+"acme", tenants.Instance{Connection: fbtest.Demo(t)})
	send := accessBootstrap(t, sm)
	if resp := send(oldToken); resp.StatusCode != 200 {
		t.Fatalf("the old key before its removal: %d %s", resp.StatusCode, resp.Body)
	}

	// The last good read was at most now; from here on nothing is read.
	sm.Hang()
	sm.Put("erp-gateway/access", after)
	cut := time.Now()
	bound := cut.Add(testMaxAge)
	var lastOK time.Time
	refused, slowest := 0, time.Duration(0)
	for time.Since(cut) < testMaxAge+4*time.Second {
		sent := time.Now()
		resp := send(oldToken)
		took := time.Since(sent)
		switch {
		case resp.StatusCode == 200:
			lastOK = sent
			if sent.After(bound) {
				t.Fatalf("the removed key still opened the instance %s after the last read (bound %s)", sent.Sub(cut), testMaxAge)
			}
		case resp.StatusCode == 503 && codeOf(resp) == erp.CodeAccessStale && resp.MultiValueHeaders["Retry-After"] != nil:
			refused++
			slowest = max(slowest, took)
		default:
			t.Fatalf("%s after the cut: %d %v %s", sent.Sub(cut), resp.StatusCode, resp.MultiValueHeaders, resp.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if refused == 0 {
		t.Fatal("never refused")
	}
	if resp := send(newToken); resp.StatusCode != 503 {
		t.Fatalf("a token of a kept key, past the bound: %d", resp.StatusCode)
	}
	t.Logf("Secrets Manager silent: the removed key's last 200 %s after the last read (bound %s); %d refusals, the slowest %s (a read's wait)",
		lastOK.Sub(cut).Round(time.Millisecond), testMaxAge, refused, slowest.Round(time.Millisecond))

	// Secrets Manager answers again: the document without the old key is
	// in force at the next read.
	sm.Answer()
	deadline := time.Now().Add(testRefresh + 5*time.Second)
	for {
		resp := send(newToken)
		if resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never served again: %d %s", resp.StatusCode, resp.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if resp := send(oldToken); resp.StatusCode != 401 || codeOf(resp) != erp.CodeUnauthorized {
		t.Fatalf("the removed key once read: %d %s", resp.StatusCode, resp.Body)
	}
}

// TestMalformedAccessDocumentIsRefusedAlike: a malformed access document
// refuses every token with 503/1206, in an environment that was serving and
// in one that starts with it (never an init error), and both serve again
// once it is mended.
func TestMalformedAccessDocumentIsRefusedAlike(t *testing.T) {
	k := newSigner(t, "k")
	good := accessDoc(t, k)
	token, _, err := k.Mint("acme", erp.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	sm := awstest.Start(t, false)
	sm.Put("erp-gateway/access", good)
	sm.PutJSON(secretsPrefix+"acme", tenants.Instance{Connection: fbtest.Demo(t)})
	warm := accessBootstrap(t, sm)
	if resp := warm(token); resp.StatusCode != 200 {
		t.Fatalf("before: %d %s", resp.StatusCode, resp.Body)
	}

	// A closing brace lost in a hand edit.
	sm.Put("erp-gateway/access", strings.TrimSuffix(good, "}"))
	deadline := time.Now().Add(testRefresh + 3*time.Second)
	for {
		resp := warm(token)
		if resp.StatusCode == 503 && codeOf(resp) == erp.CodeAccessStale {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the warm environment kept serving: %d %s", resp.StatusCode, resp.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fresh := accessBootstrap(t, sm)
	if resp := fresh(token); resp.StatusCode != 503 || codeOf(resp) != erp.CodeAccessStale {
		t.Fatalf("a new environment: %d %s", resp.StatusCode, resp.Body)
	}

	sm.Put("erp-gateway/access", good)
	time.Sleep(testRefresh)
	for name, send := range map[string]func(string) events.APIGatewayProxyResponse{"warm": warm, "new": fresh} {
		if resp := send(token); resp.StatusCode != 200 {
			t.Fatalf("%s environment, the mended document: %d %s", name, resp.StatusCode, resp.Body)
		}
	}
}
