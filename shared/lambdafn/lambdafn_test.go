package lambdafn_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/lambdafn"
	"github.com/erp-gateway/gateway/shared/tenants"
)

const prefix = "erp-gateway/instances/"

// secretsManager speaks the Secrets Manager protocol (awsJson 1.1) for
// GetSecretValue, and counts the calls per secret.
type secretsManager struct {
	t        testing.TB
	mu       sync.Mutex
	secrets  map[string]string
	calls    map[string]int
	throttle bool
	delay    time.Duration
}

func newSecretsManager(t testing.TB) (*secretsManager, *httptest.Server) {
	sm := &secretsManager{t: t, secrets: map[string]string{}, calls: map[string]int{}}
	srv := httptest.NewServer(sm)
	t.Cleanup(srv.Close)
	// The standard environment, as AWS documents it; nothing else points the
	// SDK at the fake.
	t.Setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", srv.URL)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	return sm, srv
}

func (sm *secretsManager) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" ||
		r.Header.Get("Content-Type") != "application/x-amz-json-1.1" ||
		!strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") {
		sm.t.Errorf("unexpected request %s %s %v", r.Method, r.URL, r.Header)
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var in struct{ SecretId string }
	json.NewDecoder(r.Body).Decode(&in)
	sm.mu.Lock()
	sm.calls[in.SecretId]++
	secret, ok := sm.secrets[in.SecretId]
	throttle, delay := sm.throttle, sm.delay
	sm.mu.Unlock()
	time.Sleep(delay)

	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	switch {
	case throttle:
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"__type":"ThrottlingException","message":"Rate exceeded"}`)
	case !ok:
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"__type":"ResourceNotFoundException","message":"Secrets Manager can't find the specified secret."}`)
	default:
		json.NewEncoder(w).Encode(map[string]any{
			"ARN":  "arn:aws:secretsmanager:us-east-1:123456789012:secret:" + in.SecretId + "-AbCdEf",
			"Name": in.SecretId, "SecretString": secret, "VersionId": "6c1f3a52-0000-4000-8000-000000000001",
			"VersionStages": []string{"AWSCURRENT"}, "CreatedDate": 1.7639e9,
		})
	}
}

func (sm *secretsManager) put(t testing.TB, instance string, inst tenants.Instance) {
	b, err := json.Marshal(inst)
	if err != nil {
		t.Fatal(err)
	}
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sm.secrets[prefix+instance] = string(b)
}

func (sm *secretsManager) callsFor(instance string) int {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	return sm.calls[prefix+instance]
}

func newFunction(t testing.TB, ttl string) *lambdafn.Function {
	t.Helper()
	env := map[string]string{"GATEWAY_SECRET_PREFIX": prefix, "GATEWAY_SECRET_TTL": ttl}
	fn, err := lambdafn.New(context.Background(), catalog.ExecuteQuery, "", func(k string) string { return env[k] },
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fn.Close() })
	return fn
}

func get(t testing.TB, fn *lambdafn.Function, instance, token string) events.APIGatewayProxyResponse {
	t.Helper()
	headers := map[string][]string{"Content-Type": {"application/json"}}
	if token != "" {
		headers["Authorization"] = []string{"Bearer " + token}
	}
	resp, err := fn.Handle(context.Background(), events.APIGatewayProxyRequest{
		HTTPMethod:        http.MethodPost,
		Path:              "/" + instance + "/RestServerIsapi.dll/api/v1/TServiceRestInterface/executequery",
		MultiValueHeaders: headers,
		Body:              `{"CLAVE":"Get_Terceros","CODIGO":"800000000"}`,
		RequestContext:    events.APIGatewayProxyRequestContext{Stage: "prod", DomainName: "abc123.execute-api.us-east-1.amazonaws.com"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestInstancesFromSecretsManager(t *testing.T) {
	sm, _ := newSecretsManager(t)
	tokenNorte, _ := tenants.NewToken()
	tokenSur, _ := tenants.NewToken()
	// Two instances on two databases (UTF8 and WIN1252) behind one handler.
	sm.put(t, "norte", tenants.Instance{Config: fbtest.Demo(t), Tokens: []string{tenants.HashToken(tokenNorte)}})
	sm.put(t, "sur", tenants.Instance{Config: fbtest.Other(t), Tokens: []string{tenants.HashToken(tokenSur)}})
	sm.mu.Lock()
	sm.secrets[prefix+"roto"] = `{"host":"h","password":"leaked-if-echoed"` // not JSON
	sm.mu.Unlock()
	fn := newFunction(t, "1500ms")

	expect := func(instance, token string, status int, contains string) {
		t.Helper()
		resp := get(t, fn, instance, token)
		if resp.StatusCode != status || !strings.Contains(resp.Body, contains) {
			t.Fatalf("%s: got %d %s, want %d with %s", instance, resp.StatusCode, resp.Body, status, contains)
		}
		if strings.Contains(resp.Body, "leaked-if-echoed") || strings.Contains(resp.Body, fbtest.Demo(t).Password) {
			t.Fatalf("secret material in %s", resp.Body)
		}
	}
	for range 5 {
		expect("norte", tokenNorte, 200, `"EMPRESA":"Distribuciones Andinas S.A.S."`)
	}
	expect("sur", tokenSur, 200, `"EMPRESA":"Exportadora Café Señorial S.A."`)
	if n, s := sm.callsFor("norte"), sm.callsFor("sur"); n != 1 || s != 1 {
		t.Fatalf("calls: norte %d, sur %d; want one each (cache hits)", n, s)
	}

	t.Run("tokens", func(t *testing.T) {
		expect("norte", "", 401, `"cod_error":1105`)
		expect("norte", "erpgw_wrong", 401, `"cod_error":1105`)
		expect("norte", tokenSur, 401, `"cod_error":1105`)
		expect("sur", tokenNorte, 401, `"cod_error":1105`)
	})
	t.Run("unknown instance looks like a wrong token and is cached briefly", func(t *testing.T) {
		unknown := get(t, fn, "nadie", tokenNorte)
		wrong := get(t, fn, "norte", "erpgw_wrong")
		if unknown.StatusCode != 401 || unknown.Body != wrong.Body {
			t.Fatalf("unknown %d %s, wrong token %d %s", unknown.StatusCode, unknown.Body, wrong.StatusCode, wrong.Body)
		}
		for range 5 {
			get(t, fn, "nadie", tokenNorte)
		}
		if n := sm.callsFor("nadie"); n != 1 {
			t.Fatalf("%d calls for an unknown instance", n)
		}
	})
	t.Run("a malformed secret answers 503 without its content", func(t *testing.T) {
		expect("roto", tokenNorte, 503, `"cod_error":1202`)
	})
	t.Run("expiry picks up a moved database", func(t *testing.T) {
		// The instance moves to the other database; until the TTL runs out
		// the cached document still serves the old one.
		sm.put(t, "norte", tenants.Instance{Config: fbtest.Other(t), Tokens: []string{tenants.HashToken(tokenNorte)}})
		expect("norte", tokenNorte, 200, `"EMPRESA":"Distribuciones Andinas S.A.S."`)
		time.Sleep(1600 * time.Millisecond)
		expect("norte", tokenNorte, 200, `"EMPRESA":"Exportadora Café Señorial S.A."`)
		if n := sm.callsFor("norte"); n != 2 {
			t.Fatalf("%d calls for norte after the TTL, want 2", n)
		}
	})
}

func TestConcurrentFirstRequestsMakeOneCall(t *testing.T) {
	sm, _ := newSecretsManager(t)
	token, _ := tenants.NewToken()
	sm.put(t, "norte", tenants.Instance{Config: fbtest.Demo(t), Tokens: []string{tenants.HashToken(token)}})
	sm.delay = 100 * time.Millisecond
	fn := newFunction(t, "")
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if resp := get(t, fn, "norte", token); resp.StatusCode != 200 {
				t.Errorf("%d %s", resp.StatusCode, resp.Body)
			}
		})
	}
	wg.Wait()
	if n := sm.callsFor("norte"); n != 1 {
		t.Fatalf("%d GetSecretValue calls for 20 concurrent first requests", n)
	}
}

func TestThrottledSecretsManagerAnswers503(t *testing.T) {
	sm, _ := newSecretsManager(t)
	token, _ := tenants.NewToken()
	sm.put(t, "norte", tenants.Instance{Config: fbtest.Demo(t), Tokens: []string{tenants.HashToken(token)}})
	sm.throttle = true
	fn := newFunction(t, "")
	start := time.Now()
	resp := get(t, fn, "norte", token)
	if resp.StatusCode != 503 || !strings.Contains(resp.Body, `"cod_error":1202`) {
		t.Fatalf("got %d %s", resp.StatusCode, resp.Body)
	}
	if took := time.Since(start); took > 6*time.Second {
		t.Fatalf("took %s", took)
	}
	t.Logf("throttled: 503 after %s and %d calls", time.Since(start).Round(time.Millisecond), sm.callsFor("norte"))
}

// execCommitted runs statements in one explicit transaction: Firebird applies
// user management at a real commit, never at the driver's autocommit
// COMMIT RETAINING.
func execCommitted(t testing.TB, db *sql.DB, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range stmts {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			tx.Rollback()
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

func TestPasswordRotation(t *testing.T) {
	sm, _ := newSecretsManager(t)
	admin := fbtest.Open(t, fbtest.Admin(t, fbtest.Demo(t)))
	execCommitted(t, admin, `CREATE OR ALTER USER ROTATOR PASSWORD 'rotate-old-1' USING PLUGIN Srp`)
	execCommitted(t, admin, `GRANT EXECUTE ON PROCEDURE REST_SELECT_TERCEROS TO ROTATOR`)
	token, _ := tenants.NewToken()
	inst := tenants.Instance{Config: fbtest.Demo(t), Tokens: []string{tenants.HashToken(token)}}
	inst.User, inst.Password = "ROTATOR", "rotate-old-1"
	sm.put(t, "norte", inst)
	fn := newFunction(t, "") // the 5-minute default: only a forced refresh reads the secret again

	if resp := get(t, fn, "norte", token); resp.StatusCode != 200 {
		t.Fatalf("before rotation: %d %s", resp.StatusCode, resp.Body)
	}
	// Rotate: new password in Firebird and in the secret, and the DBA drops
	// the sessions that logged in with the old one.
	execCommitted(t, admin, `ALTER USER ROTATOR PASSWORD 'rotate-new-2' USING PLUGIN Srp`)
	execCommitted(t, admin, `DELETE FROM MON$ATTACHMENTS WHERE MON$USER = 'ROTATOR'`)
	inst.Password = "rotate-new-2"
	sm.put(t, "norte", inst)

	if resp := get(t, fn, "norte", token); resp.StatusCode != 200 || !strings.Contains(resp.Body, `"data"`) {
		t.Fatalf("after rotation: %d %s", resp.StatusCode, resp.Body)
	}
	if n := sm.callsFor("norte"); n != 2 {
		t.Fatalf("%d GetSecretValue calls, want 2 (first lookup, refresh after the refused login)", n)
	}
}
