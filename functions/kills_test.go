package functions_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// TestExecuteBootstrapsSurviveKills: keyed inserts at 8 clients through
// four real execute bootstraps (four execution environments) under the
// emulated Runtime API, while Firebird is killed (kill -9) twice and a
// bootstrap once, mid-invocation, and replaced as Lambda replaces a dead
// environment. Every answer that is not final (503, 409, no answer) is sent
// again with the same key until it is: each third party then exists
// exactly once, no client sees its own write as "YA EXISTE", and no
// transaction of consequence is left behind.
func TestExecuteBootstrapsSurviveKills(t *testing.T) {
	cfg := fbtest.Demo(t)
	fbtest.KeyTable(t, cfg)
	admin := fbtest.Open(t, fbtest.Admin(t, cfg))
	instances, err := json.Marshal(map[string]tenants.Instance{"demo": {Connection: cfg, Idempotency: true}})
	if err != nil {
		t.Fatal(err)
	}
	_, acc := fbtest.Access(t, "demo")
	api, srv := newRuntimeAPI(t)
	bin := buildBootstrap(t, "execute")
	start := func() *exec.Cmd {
		_, cmd := startBootstrapCmd(t, bin, strings.TrimPrefix(srv.URL, "http://"),
			"GATEWAY_INSTANCES_JSON="+string(instances), "GATEWAY_ACCESS_JSON="+string(acc), "GATEWAY_DB_TIMEOUT=3s")
		return cmd
	}
	var envs []*exec.Cmd
	for range 4 {
		envs = append(envs, start())
	}
	base := restEvent(t, apiPath+"execute", "", nil)

	// The clients write until the faults are over.
	const clients = 8
	var stop atomic.Bool
	run := time.Now().UnixNano() % 1e8
	codes := make([][]string, clients)
	var yaExiste atomic.Int64
	var tries fbtest.Retrying
	var failures sync.Map
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				code := fmt.Sprintf("B%d%d%04d", run, c, i)
				codes[c] = append(codes[c], code)
				ev := base
				ev.Body = fbtest.SetTerceros(code, "Kill")
				ev.Headers = maps.Clone(base.Headers)
				ev.MultiValueHeaders = maps.Clone(base.MultiValueHeaders)
				ev.Headers["Idempotency-Key"] = "key-" + code
				ev.MultiValueHeaders["Idempotency-Key"] = []string{"key-" + code}
				a, ok := tries.Until(ctx, fbtest.Final, func() fbtest.Answer {
					// A killed environment never answers: as API Gateway
					// would, the client gives up on it.
					resp, answered := api.invokeWithin(ev, 8*time.Second)
					if !answered {
						return fbtest.Answer{Err: errors.New("no answer")}
					}
					return fbtest.Answer{Status: resp.StatusCode, Body: resp.Body, Header: resp.MultiValueHeaders}
				})
				switch {
				case !ok:
					failures.Store(code, "never got a final answer")
					return
				case a.Status == 200 && strings.HasPrefix(a.Body, `{"cod_error":0,"data":[{"CODIGO":"`+code+`"`):
				case strings.Contains(a.Body, "YA EXISTE"):
					yaExiste.Add(1)
					failures.Store(code, a.Body)
				default:
					failures.Store(code, fmt.Sprintf("HTTP %d %s", a.Status, a.Body))
				}
			}
		}()
	}

	time.Sleep(700 * time.Millisecond)
	fbtest.KillFirebird(t)
	time.Sleep(1500 * time.Millisecond)
	envs[0].Process.Kill() // an execution environment, mid-invocation
	envs[0] = start()
	time.Sleep(1500 * time.Millisecond)
	fbtest.KillFirebird(t)
	time.Sleep(2 * time.Second)
	stop.Store(true)
	wg.Wait()
	fbtest.WaitForFirebird(t, admin)

	failures.Range(func(code, why any) bool {
		t.Errorf("%s: %s", code, why)
		return true
	})
	if yaExiste.Load() > 0 {
		t.Errorf("%d clients saw their own write as YA EXISTE", yaExiste.Load())
	}
	for _, cs := range codes {
		for _, code := range cs {
			if n := fbtest.ThirdParties(t, admin, code); n != 1 {
				t.Errorf("%s exists %d times, want once", code, n)
			}
		}
	}
	writes := 0
	for _, cs := range codes {
		writes += len(cs)
	}
	t.Logf("%d writes, %d invocations, %d of them sent again; %d replayed", writes, tries.Sent.Load(), tries.Again.Load(), tries.Replayed.Load())
	if tries.Again.Load() == 0 {
		t.Error("no request was sent again: the faults missed the load")
	}
	fbtest.AfterLoad(t, admin)
}
