package lambdafn_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/erp-gateway/gateway/shared/access"
	"github.com/erp-gateway/gateway/shared/awstest"
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/lambdafn"
	"github.com/erp-gateway/gateway/shared/tenants"
)

const (
	prefix   = "erp-gateway/instances/"
	accessID = "erp-gateway/access"
	stranger = "stranger"
)

// newSecretsManager serves the instances' secrets and an access document,
// returned for minting.
func newSecretsManager(t testing.TB) (*awstest.SecretsManager, *fbtest.Keys) {
	sm := awstest.Start(t, true)
	doc, data := fbtest.Access(t)
	sm.Put(accessID, string(data))
	return sm, doc
}

func put(sm *awstest.SecretsManager, instance string, inst tenants.Instance) {
	sm.PutJSON(prefix+instance, inst)
}

func newFunction(t testing.TB, ttl string) *lambdafn.Function {
	t.Helper()
	env := map[string]string{"GATEWAY_SECRET_PREFIX": prefix, "GATEWAY_SECRET_TTL": ttl, "GATEWAY_ACCESS_SECRET": accessID}
	fn, err := lambdafn.New(context.Background(), catalog.ExecuteQuery, "", fbtest.Settings(t, env),
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
	sm, doc := newSecretsManager(t)
	tokenNorte, tokenSur := fbtest.Token(t, doc, "norte"), fbtest.Token(t, doc, "sur")
	// Two instances on two databases (UTF8 and WIN1252) behind one handler.
	put(sm, "norte", tenants.Instance{Connection: fbtest.Demo(t)})
	put(sm, "sur", tenants.Instance{Connection: fbtest.Other(t)})
	sm.Put(prefix+"roto", `{"host":"h","password":"leaked-if-echoed"`) // not JSON
	put(sm, "cifrado", tenants.Instance{Connection: fbtest.Demo(t)})
	sm.Fail(prefix+"cifrado", "DecryptionFailure")
	put(sm, "borrado", tenants.Instance{Connection: fbtest.Demo(t)})
	sm.Delete(prefix + "borrado") // scheduled for deletion, in moto
	fn := newFunction(t, "1500ms")
	if n := sm.Calls(accessID); n != 1 {
		t.Fatalf("the access document was read %d times at start-up", n)
	}

	expect := func(instance, token string, status int, contains string) events.APIGatewayProxyResponse {
		t.Helper()
		resp := get(t, fn, instance, token)
		if resp.StatusCode != status || !strings.Contains(resp.Body, contains) {
			t.Fatalf("%s: got %d %s, want %d with %s", instance, resp.StatusCode, resp.Body, status, contains)
		}
		if strings.Contains(resp.Body, "leaked-if-echoed") || strings.Contains(resp.Body, fbtest.Demo(t).Password) {
			t.Fatalf("secret material in %s", resp.Body)
		}
		return resp
	}
	for range 5 {
		expect("norte", tokenNorte, 200, `"EMPRESA":"Distribuciones Andinas S.A.S."`)
	}
	expect("sur", tokenSur, 200, `"EMPRESA":"Exportadora Café Señorial S.A."`)
	if n, s := sm.Calls(prefix+"norte"), sm.Calls(prefix+"sur"); n != 1 || s != 1 {
		t.Fatalf("calls: norte %d, sur %d; want one each (cache hits)", n, s)
	}

	wrong := expect("norte", "erpgw_wrong", 401, `"cod_error":1105`)
	t.Run("refused tokens cost no secret call", func(t *testing.T) {
		before := sm.Total()
		expect("norte", "", 401, `"cod_error":1105`)
		expect("norte", tokenSur, 401, `"cod_error":1105`)
		expect("sur", tokenNorte, 401, `"cod_error":1105`)
		expect("nadie", tokenNorte, 401, `"cod_error":1105`)
		expect("nadie", "", 401, `"cod_error":1105`)
		if n := sm.Total() - before; n != 0 {
			t.Fatalf("%d secret calls for refused tokens", n)
		}
	})
	t.Run("an unknown instance with a token minted for its name looks like a wrong token, and is cached", func(t *testing.T) {
		token := fbtest.Token(t, doc, "nadie")
		for range 5 {
			if resp := get(t, fn, "nadie", token); resp.StatusCode != 401 || resp.Body != wrong.Body {
				t.Fatalf("unknown %d %s, wrong token %s", resp.StatusCode, resp.Body, wrong.Body)
			}
		}
		if n := sm.Calls(prefix + "nadie"); n != 1 {
			t.Fatalf("%d calls for an unknown instance", n)
		}
	})
	t.Run("a secret scheduled for deletion is an unknown instance", func(t *testing.T) {
		token := fbtest.Token(t, doc, "borrado")
		for range 3 {
			if resp := get(t, fn, "borrado", token); resp.StatusCode != 401 || resp.Body != wrong.Body {
				t.Fatalf("%d %s", resp.StatusCode, resp.Body)
			}
		}
		if n := sm.Calls(prefix + "borrado"); n != 1 {
			t.Fatalf("%d calls", n)
		}
	})
	t.Run("malformed and undecryptable secrets answer 503 without content, fetched once a while", func(t *testing.T) {
		for _, name := range []string{"roto", "cifrado"} {
			token := fbtest.Token(t, doc, name)
			for range 3 {
				expect(name, token, 503, `"cod_error":1202`)
			}
			if n := sm.Calls(prefix + name); n != 1 {
				t.Fatalf("%s: %d calls for 3 requests", name, n)
			}
		}
	})
	t.Run("expiry picks up a moved database", func(t *testing.T) {
		// The document is read afresh first, so that what follows falls
		// well within its TTL however long the steps before took.
		time.Sleep(1600 * time.Millisecond)
		expect("norte", tokenNorte, 200, `"EMPRESA":"Distribuciones Andinas S.A.S."`)
		// The instance moves to the other database; until the TTL runs out
		// the cached document still serves the old one.
		put(sm, "norte", tenants.Instance{Connection: fbtest.Other(t)})
		expect("norte", tokenNorte, 200, `"EMPRESA":"Distribuciones Andinas S.A.S."`)
		time.Sleep(1600 * time.Millisecond)
		expect("norte", tokenNorte, 200, `"EMPRESA":"Exportadora Café Señorial S.A."`)
		if n := sm.Calls(prefix + "norte"); n != 3 {
			t.Fatalf("%d calls for norte after two TTLs, want 3", n)
		}
	})
	t.Run("a revoked token stops opening its instance", func(t *testing.T) {
		token, id, err := doc.Mint("sur", erp.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		expect("sur", token, 200, `"data"`)
		put(sm, "sur", tenants.Instance{Connection: fbtest.Other(t), RevokedTokens: []string{id}})
		time.Sleep(1600 * time.Millisecond) // the secret's TTL in this test
		expect("sur", token, 401, `"cod_error":1105`)
		expect("sur", tokenSur, 200, `"data"`)
	})
}

// strangerRequests sends n requests to random instance names, every other
// one with a well-formed token minted with a key the deployment does not
// have.
func strangerRequests(t testing.TB, fn *lambdafn.Function, n int) {
	foreign, _ := fbtest.Access(t)
	for i := range n {
		name := fmt.Sprintf("%s%x", stranger, rand.Uint64())
		token := ""
		if i%2 == 0 {
			token = fbtest.Token(t, foreign, name)
		}
		if resp := get(t, fn, name, token); resp.StatusCode != 401 {
			t.Fatalf("%s: %d %s", name, resp.StatusCode, resp.Body)
		}
	}
}

// TestStrangersCostNothing: random names, with and without well-formed
// tokens, make no Secrets Manager call and leave nothing behind.
func TestStrangersCostNothing(t *testing.T) {
	sm, _ := newSecretsManager(t)
	fn := newFunction(t, "")
	strangerRequests(t, fn, 2000) // warm up: pools of the runtime, the SDK
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	// 500,000 names: a leak of 10 bytes a request would show (the heap
	// moves by some 14 KB). A tenth under the race detector, the bound
	// with it.
	n, bound := 500_000, int64(5<<20)
	if raceDetector {
		n, bound = n/10, bound/10
	}
	strangerRequests(t, fn, n)
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d random names: heap %d -> %d bytes (%+d), %d secret calls beyond the access document", n, before.HeapAlloc, after.HeapAlloc, grew, sm.Total()-sm.Calls(accessID))
	if grew > bound {
		t.Fatalf("the heap grew by %d bytes", grew)
	}
	if n := sm.Total() - sm.Calls(accessID); n != 0 {
		t.Fatalf("%d secret calls for strangers", n)
	}
}

func TestConcurrentFirstRequestsMakeOneCall(t *testing.T) {
	sm, doc := newSecretsManager(t)
	token := fbtest.Token(t, doc, "norte")
	put(sm, "norte", tenants.Instance{Connection: fbtest.Demo(t)})
	fn := newFunction(t, "")
	sm.Delay(100 * time.Millisecond)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if resp := get(t, fn, "norte", token); resp.StatusCode != 200 {
				t.Errorf("%d %s", resp.StatusCode, resp.Body)
			}
		})
	}
	wg.Wait()
	if n := sm.Calls(prefix + "norte"); n != 1 {
		t.Fatalf("%d GetSecretValue calls for 20 concurrent first requests", n)
	}
}

func TestThrottledSecretsManagerAnswers503(t *testing.T) {
	sm, doc := newSecretsManager(t)
	token := fbtest.Token(t, doc, "norte")
	put(sm, "norte", tenants.Instance{Connection: fbtest.Demo(t)})
	fn := newFunction(t, "")
	sm.FailAll("ThrottlingException")
	start := time.Now()
	resp := get(t, fn, "norte", token)
	if resp.StatusCode != 503 || !strings.Contains(resp.Body, `"cod_error":1202`) {
		t.Fatalf("got %d %s", resp.StatusCode, resp.Body)
	}
	if took := time.Since(start); took > 6*time.Second {
		t.Fatalf("took %s", took)
	}
	t.Logf("throttled: 503 after %s and %d calls", time.Since(start).Round(time.Millisecond), sm.Calls(prefix+"norte"))

	// The throttling ends: the instance, which had no document to serve,
	// serves again within ColdRetry (5 s), not NegativeTTL (30 s), and is
	// not asked at every request meanwhile.
	sm.FailAll("")
	ended, calls := time.Now(), sm.Calls(prefix+"norte")
	for get(t, fn, "norte", token).StatusCode != 200 {
		if time.Since(ended) > 7*time.Second {
			t.Fatalf("still refused %s after the throttling ended", time.Since(ended).Round(time.Millisecond))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := sm.Calls(prefix+"norte") - calls; n > 2 {
		t.Fatalf("%d secret calls while it waited, want one (two SDK attempts at most)", n)
	}
	t.Logf("served again %s after the throttling ended", time.Since(ended).Round(time.Millisecond))
}

// TestAnUnreadableAccessDocumentRefusesTokens: a function whose access
// document is missing or malformed starts, and answers every request
// 503/1206 without any per-instance work, until it reads a good one.
func TestAnUnreadableAccessDocumentRefusesTokens(t *testing.T) {
	for _, tt := range []struct{ name, secret string }{
		{"missing", ""},
		{"no keys", `{"keys":{}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sm := awstest.Start(t, true)
			if tt.secret != "" {
				sm.Put(accessID, tt.secret)
			}
			good, data := fbtest.Access(t)
			put(sm, "norte", tenants.Instance{Connection: fbtest.Demo(t)})
			env := map[string]string{"GATEWAY_SECRET_PREFIX": prefix, "GATEWAY_ACCESS_SECRET": accessID, "GATEWAY_ACCESS_REFRESH": "200ms"}
			fn, err := lambdafn.New(context.Background(), catalog.ExecuteQuery, "", fbtest.Settings(t, env), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { fn.Close() })
			token := fbtest.Token(t, good, "norte")
			for range 3 {
				resp := get(t, fn, "norte", token)
				if resp.StatusCode != 503 || !strings.Contains(resp.Body, `"cod_error":1206`) || resp.MultiValueHeaders["Retry-After"] == nil {
					t.Fatalf("got %d %v %s", resp.StatusCode, resp.MultiValueHeaders, resp.Body)
				}
			}
			if n := sm.Calls(prefix + "norte"); n != 0 {
				t.Fatalf("%d instance secret calls without a document", n)
			}
			sm.Put(accessID, string(data))
			time.Sleep(250 * time.Millisecond)
			if resp := get(t, fn, "norte", token); resp.StatusCode != 200 {
				t.Fatalf("with the document: %d %s", resp.StatusCode, resp.Body)
			}
		})
	}
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
	sm, doc := newSecretsManager(t)
	admin := fbtest.Open(t, fbtest.Admin(t, fbtest.Demo(t)))
	execCommitted(t, admin, `CREATE OR ALTER USER ROTATOR PASSWORD 'rotate-old-1' USING PLUGIN Srp`)
	execCommitted(t, admin, `GRANT EXECUTE ON PROCEDURE REST_SELECT_TERCEROS TO ROTATOR`)
	token := fbtest.Token(t, doc, "norte")
	inst := tenants.Instance{Connection: fbtest.Demo(t)}
	inst.User, inst.Password = "ROTATOR", "rotate-old-1"
	put(sm, "norte", inst)
	fn := newFunction(t, "") // the 5-minute default: only a forced refresh reads the secret again

	if resp := get(t, fn, "norte", token); resp.StatusCode != 200 {
		t.Fatalf("before rotation: %d %s", resp.StatusCode, resp.Body)
	}
	// Rotate: new password in Firebird and in the secret, and the DBA drops
	// the sessions that logged in with the old one.
	execCommitted(t, admin, `ALTER USER ROTATOR PASSWORD 'rotate-new-2' USING PLUGIN Srp`)
	execCommitted(t, admin, `DELETE FROM MON$ATTACHMENTS WHERE MON$USER = 'ROTATOR'`)
	inst.Password = "rotate-new-2"
	put(sm, "norte", inst)

	if resp := get(t, fn, "norte", token); resp.StatusCode != 200 || !strings.Contains(resp.Body, `"data"`) {
		t.Fatalf("after rotation: %d %s", resp.StatusCode, resp.Body)
	}
	if n := sm.Calls(prefix + "norte"); n != 2 {
		t.Fatalf("%d GetSecretValue calls, want 2 (first lookup, refresh after the refused login)", n)
	}
}

// TestTheDemoKeyFromSecretsManagerRefusesTokens: the README's demo token,
// or any minted with the published demo key, opens nothing once the access
// document comes from Secrets Manager; a key of the operator's own then
// opens its tokens.
func TestTheDemoKeyFromSecretsManagerRefusesTokens(t *testing.T) {
	demo, err := os.ReadFile("../../infra/access.demo.json")
	if err != nil {
		t.Fatal(err)
	}
	sm := awstest.Start(t, true)
	sm.Put(accessID, string(demo))
	put(sm, "demo", tenants.Instance{Connection: fbtest.Demo(t)})
	env := map[string]string{"GATEWAY_SECRET_PREFIX": prefix, "GATEWAY_ACCESS_SECRET": accessID, "GATEWAY_ACCESS_REFRESH": "200ms"}
	fn, err := lambdafn.New(context.Background(), catalog.ExecuteQuery, "", fbtest.Settings(t, env), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fn.Close() })
	key, err := os.ReadFile("../../infra/signing-key.demo.json")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := access.ParseSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := signer.Mint("demo", erp.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	resp := get(t, fn, "demo", token)
	if resp.StatusCode != 503 || !strings.Contains(resp.Body, `"cod_error":1207`) || !strings.Contains(resp.Body, "make token-key") {
		t.Fatalf("the demo key: %d %s", resp.StatusCode, resp.Body)
	}
	if n := sm.Calls(prefix + "demo"); n != 0 {
		t.Errorf("%d instance secret reads behind the demo key", n)
	}
	own, data := fbtest.Access(t)
	sm.Put(accessID, string(data))
	time.Sleep(250 * time.Millisecond)
	if resp := get(t, fn, "demo", fbtest.Token(t, own, "demo")); resp.StatusCode != 200 {
		t.Fatalf("the operator's own key: %d %s", resp.StatusCode, resp.Body)
	}
}

// TestReadsWithAUserOfTheirOwn: with GATEWAY_SECRET_SUFFIX=/reader (the
// template's ReadOnlyDatabaseUser), the reads' function reads each
// instance's second secret and reaches the database as a user that may only
// read; the writes' function keeps the instance's own secret and user. The
// health check holds the reader to the reads, and warns of a write it could
// run.
func TestReadsWithAUserOfTheirOwn(t *testing.T) {
	sm, doc := newSecretsManager(t)
	token := fbtest.Token(t, doc, "demo")
	put(sm, "demo", tenants.Instance{Connection: fbtest.Demo(t)})
	put(sm, "demo/reader", tenants.Instance{Connection: fbtest.Reader(t), ReadOnly: true})
	function := func(endpoint catalog.Endpoint, suffix string) *lambdafn.Function {
		env := map[string]string{"GATEWAY_SECRET_PREFIX": prefix, "GATEWAY_SECRET_SUFFIX": suffix, "GATEWAY_ACCESS_SECRET": accessID}
		fn, err := lambdafn.New(context.Background(), endpoint, "", fbtest.Settings(t, env), slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fn.Close() })
		return fn
	}
	reads, writes := function(catalog.ExecuteQuery, "/reader"), function(catalog.Execute, "")
	call := func(fn *lambdafn.Function, method, path, body string) events.APIGatewayProxyResponse {
		t.Helper()
		resp, err := fn.Handle(context.Background(), events.APIGatewayProxyRequest{
			HTTPMethod: method, Path: path, Body: body,
			MultiValueHeaders: map[string][]string{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"}},
			RequestContext:    events.APIGatewayProxyRequestContext{Stage: "prod", DomainName: "abc123.execute-api.us-east-1.amazonaws.com"},
		})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	const api = "/demo/RestServerIsapi.dll/api/v1/TServiceRestInterface/"
	if resp := get(t, reads, "demo", token); resp.StatusCode != 200 || !strings.Contains(resp.Body, `"EMPRESA":"Distribuciones Andinas S.A.S."`) {
		t.Fatalf("a read as the reader: %d %s", resp.StatusCode, resp.Body)
	}
	if n := sm.Calls(prefix + "demo"); n != 0 {
		t.Fatalf("the reads' function read the writer's secret %d times", n)
	}
	code := fmt.Sprintf("R%d", time.Now().UnixNano()%1e12)
	if resp := call(writes, http.MethodPost, api+"execute", `{"CLAVE":"Set_Terceros","CODIGO":"`+code+`","DV":"1","NATURALEZA":"N","NOM1":"Ana","APL1":"Peña","RAZON_COMERCIAL":"Ana Peña","DIRECCION":"Calle 2","CODIDENTIDAD":"CC","CODSOCIEDAD":"PN","CODPAIS":"CO","CODMUNICIPIO":"11001"}`); resp.StatusCode != 200 || !strings.Contains(resp.Body, `"NOMBRE":"Ana Peña"`) {
		t.Fatalf("a write as the instance's user: %d %s", resp.StatusCode, resp.Body)
	}
	if n := sm.Calls(prefix + "demo/reader"); n != 1 {
		t.Fatalf("the reader's secret was read %d times, want once (by the reads' function)", n)
	}
	// Who the database saw.
	admin := fbtest.Open(t, fbtest.Admin(t, fbtest.Demo(t)))
	tx, err := admin.Begin() // a MON$ snapshot of now
	if err != nil {
		t.Fatal(err)
	}
	var readers int
	if err := tx.QueryRow(`SELECT COUNT(*) FROM MON$ATTACHMENTS WHERE MON$USER = 'GATEWAY_READER' AND MON$CLIENT_VERSION STARTING WITH 'erp-gateway '`).Scan(&readers); err != nil || readers == 0 {
		t.Fatalf("no attachment of the reader's (%v)", err)
	}
	tx.Rollback()
	// The database holds the reader to reads whatever a function would do.
	var n int
	err = fbtest.Open(t, fbtest.Reader(t)).QueryRow(`SELECT COUNT(*) FROM RDB$DATABASE WHERE 0 < (SELECT COUNT(*) FROM REST_SELECT_TERCEROS('800000000'))`).Scan(&n)
	if err != nil {
		t.Fatalf("the reader reads: %v", err)
	}
	if _, err := fbtest.Open(t, fbtest.Reader(t)).Exec(`EXECUTE PROCEDURE REST_INSERT_TERCEROS('X', 'X', 'N', '', '', '', '', '', '', '', '', '', '', '', '', 'CC', 'PN', 'CO', 'NA', 'NA', '05001')`); err == nil || !strings.Contains(err.Error(), "no permission") {
		t.Fatalf("the reader wrote: %v", err)
	}
	// Its health: the reads, none of the writes it must not run.
	if resp := call(reads, http.MethodGet, "/demo/health", ""); resp.StatusCode != 200 || resp.Body != `{"cod_error":0,"status":"ok"}` {
		t.Fatalf("the reader's health: %d %s", resp.StatusCode, resp.Body)
	}
	fbtest.Setup(t, fbtest.Demo(t), "GRANT EXECUTE ON PROCEDURE REST_INSERT_TERCEROS TO GATEWAY_READER")
	t.Cleanup(func() {
		fbtest.Setup(t, fbtest.Demo(t), "REVOKE EXECUTE ON PROCEDURE REST_INSERT_TERCEROS FROM GATEWAY_READER")
	})
	time.Sleep(1100 * time.Millisecond) // past the health check's reuse of a reading
	if resp := call(reads, http.MethodGet, "/demo/health", ""); resp.StatusCode != 200 || !strings.Contains(resp.Body, `"status":"warnings"`) ||
		!strings.Contains(resp.Body, "REST_INSERT_TERCEROS (Set_Terceros): a write, and this read-only user may execute it (REVOKE EXECUTE ON PROCEDURE REST_INSERT_TERCEROS FROM GATEWAY_READER)") {
		t.Fatalf("the reader's health with a write granted: %d %s", resp.StatusCode, resp.Body)
	}
}

// TestInlineInstancesOverSecretsManagerAreSaid: GATEWAY_INSTANCES_JSON (sam
// local, tests) wins over GATEWAY_SECRET_PREFIX, and a function given both
// says so at start, where it used to serve the inline instances silently.
func TestInlineInstancesOverSecretsManagerAreSaid(t *testing.T) {
	_, data := fbtest.Access(t)
	inline := `{"norte":{"host":"127.0.0.1","database":"x","user":"u","password":"hunter2"}}`
	for _, tt := range []struct {
		name   string
		prefix string
		warned bool
	}{{"inline alone", "", false}, {"inline and a prefix", prefix, true}} {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"GATEWAY_INSTANCES_JSON": inline, "GATEWAY_SECRET_PREFIX": tt.prefix, "GATEWAY_ACCESS_JSON": string(data)}
			var logs strings.Builder
			fn, err := lambdafn.New(context.Background(), catalog.ExecuteQuery, "", fbtest.Settings(t, env), slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { fn.Close() })
			if warned := strings.Contains(logs.String(), "GATEWAY_SECRET_PREFIX is ignored"); warned != tt.warned || strings.Contains(logs.String(), "hunter2") {
				t.Fatalf("warned %v, want %v:\n%s", warned, tt.warned, logs.String())
			}
		})
	}
}
