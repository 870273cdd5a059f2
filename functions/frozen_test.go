package functions_test

import (
	"strings"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/fbtest"
)

// TestBootstrapAnswersAFrozenDatabaseInTime: the real executequery
// bootstrap as deployed (streaming, on one P) answers a read whose database
// froze (SIGSTOP) with 503 within its deadline, and reads again once the
// database thaws.
func TestBootstrapAnswersAFrozenDatabaseInTime(t *testing.T) {
	const timeout = time.Second
	api, srv := newRuntimeAPI(t)
	env := append(environ(inline(t, nil)), "GATEWAY_RESPONSE_STREAMING=true", "GATEWAY_DB_TIMEOUT="+timeout.String())
	startBootstrap(t, buildBootstrap(t, "executequery"), strings.TrimPrefix(srv.URL, "http://"), env...)
	read := restEvent(t, apiPath+"executequery", `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`, nil)
	if resp, _ := api.invoke(read); resp.StatusCode != 200 {
		t.Fatalf("warm-up: %d %s", resp.StatusCode, resp.Body)
	}

	thaw := fbtest.Freeze(t)
	began := time.Now()
	resp, _ := api.invoke(read)
	took := time.Since(began)
	thaw()
	// The deadline, and the grace an abandoned call gets (the wire's watch in
	// shared/firebird).
	if resp.StatusCode != 503 || !strings.Contains(resp.Body, `"cod_error":1201`) || took > timeout+time.Second {
		t.Fatalf("frozen database: %d after %s: %s", resp.StatusCode, took.Round(time.Millisecond), resp.Body)
	}
	t.Logf("frozen database: 503 after %s", took.Round(time.Millisecond))

	for end := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, _ := api.invoke(read)
		if resp.StatusCode == 200 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("10 s after the database thawed: %d %s", resp.StatusCode, resp.Body)
		}
	}
}

// TestBootstrapsAnswerBeforeLambdasDeadline: whatever GATEWAY_DB_TIMEOUT
// says, a call ends a second before the function's own timeout, so that a
// frozen database still gets its 503 out where Lambda would stop the
// function and API Gateway answer a bare 502: buffered and streamed.
func TestBootstrapsAnswerBeforeLambdasDeadline(t *testing.T) {
	const limit = 3 * time.Second
	for _, streaming := range []string{"false", "true"} {
		t.Run("streaming="+streaming, func(t *testing.T) {
			api, srv := newRuntimeAPI(t)
			env := append(environ(inline(t, nil)), "GATEWAY_RESPONSE_STREAMING="+streaming, "GATEWAY_DB_TIMEOUT=20s")
			startBootstrap(t, buildBootstrap(t, "executequery"), strings.TrimPrefix(srv.URL, "http://"), env...)
			read := restEvent(t, apiPath+"executequery", `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`, nil)
			if resp, _ := api.invoke(read); resp.StatusCode != 200 {
				t.Fatalf("warm-up: %d %s", resp.StatusCode, resp.Body)
			}
			api.limit.Store(int64(limit))
			thaw := fbtest.Freeze(t)
			began := time.Now()
			resp, _ := api.invoke(read)
			took := time.Since(began)
			thaw()
			if resp.StatusCode != 503 || !strings.Contains(resp.Body, `"cod_error":1201`) || took >= limit {
				t.Fatalf("frozen database, a %s function: %d after %s: %s", limit, resp.StatusCode, took.Round(time.Millisecond), resp.Body)
			}
			t.Logf("frozen database, a %s function: 503 after %s", limit, took.Round(time.Millisecond))
		})
	}
}
