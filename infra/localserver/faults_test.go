package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// TestKeyedWritesSurviveKills: keyed inserts at 8 clients, every other one a
// document (a batch: a third party, an order for it and two lines), while
// Firebird is killed (kill -9) twice and the local server once. Every answer
// that is not final (503, 409, no answer) is sent again with the same key
// until it is: each third party then exists exactly once, each document
// whole and once, no client sees its own write as "YA EXISTE", and the
// gateway leaves no transaction of consequence behind.
func TestKeyedWritesSurviveKills(t *testing.T) {
	cfg := fbtest.Demo(t)
	fbtest.KeyTable(t, cfg)
	admin := fbtest.Open(t, fbtest.Admin(t, cfg))
	instances, err := json.Marshal(map[string]tenants.Instance{"demo": {Connection: cfg, Idempotency: true}})
	if err != nil {
		t.Fatal(err)
	}
	instancesPath := filepath.Join(t.TempDir(), "instances.json")
	if err := os.WriteFile(instancesPath, instances, 0o600); err != nil {
		t.Fatal(err)
	}
	bin, access := build(t), accessFile(t, "demo")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	logs := &output{}
	var mu sync.Mutex
	var cmd *exec.Cmd
	launch := func() {
		mu.Lock()
		defer mu.Unlock()
		cmd = exec.Command(bin, "-addr", addr, "-instances", instancesPath, "-access", access)
		cmd.Env = append(os.Environ(), "GATEWAY_DB_TIMEOUT=3s", "GATEWAY_BATCH_TIMEOUT=3s", "GATEWAY_CATALOG=../catalog.demo.json")
		cmd.Stdout, cmd.Stderr = logs, logs
		if err := cmd.Start(); err != nil {
			t.Error(err)
		}
	}
	launch()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("server output:\n%s", logs.String())
		}
	})
	url := "http://" + addr + "/demo/RestServerIsapi.dll/api/v1/TServiceRestInterface/execute"

	const clients, each = 8, 40
	run := time.Now().UnixNano() % 1e8
	codes := make([][]string, clients)
	var yaExiste atomic.Int64
	var tries fbtest.Retrying
	var failures sync.Map
	hc := &http.Client{Timeout: 10 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The clients write at least each, and on until the faults are over:
	// on a fast machine they must not have finished before the first.
	var over atomic.Bool
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each || !over.Load(); i++ {
				code := fmt.Sprintf("K%d%d%02d", run, c, i)
				codes[c] = append(codes[c], code)
				body, answered := fbtest.SetTerceros(code, "Kill"), `{"cod_error":0,"data":[{"CODIGO":"`+code+`"`
				if i%2 == 1 {
					body, answered = fbtest.Document(code), `[{"cod_error":0,"data":[{"CODIGO":"`+code+`"`
				}
				a, ok := tries.Until(ctx, fbtest.Final, func() fbtest.Answer { return postWithKey(ctx, hc, url, "key-"+code, body) })
				switch {
				case !ok:
					failures.Store(code, "never got a final answer")
					return
				case a.Status == 200 && strings.HasPrefix(a.Body, answered) && !strings.Contains(a.Body, `"cod_error":15`):
				case strings.Contains(a.Body, "YA EXISTE"):
					yaExiste.Add(1)
					failures.Store(code, a.Body)
				default:
					failures.Store(code, fmt.Sprintf("HTTP %d %s", a.Status, a.Body))
				}
			}
		}()
	}

	// The faults, while the clients write.
	time.Sleep(700 * time.Millisecond)
	fbtest.KillFirebird(t)
	time.Sleep(1500 * time.Millisecond)
	mu.Lock()
	cmd.Process.Kill() // the gateway, mid-request
	cmd.Wait()
	mu.Unlock()
	time.Sleep(300 * time.Millisecond)
	launch()
	time.Sleep(1500 * time.Millisecond)
	fbtest.KillFirebird(t)
	over.Store(true)
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
		for i, code := range cs {
			if n := fbtest.ThirdParties(t, admin, code); n != 1 {
				t.Errorf("%s exists %d times, want once", code, n)
			}
			if orders, lines := fbtest.DocumentRows(t, admin, code); i%2 == 1 && (orders != 1 || lines != 2) {
				t.Errorf("document %s: %d orders and %d lines, want 1 and 2", code, orders, lines)
			}
		}
	}
	written := 0
	for _, cs := range codes {
		written += len(cs)
	}
	t.Logf("%d writes, %d requests, %d of them sent again; %d answered 1204, %d replayed", written, tries.Sent.Load(), tries.Again.Load(), tries.Unknown.Load(), tries.Replayed.Load())
	if tries.Again.Load() == 0 {
		t.Error("no request was sent again: the faults missed the load")
	}
	fbtest.AfterLoad(t, admin)
}

func postWithKey(ctx context.Context, hc *http.Client, url, key, body string) fbtest.Answer {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return fbtest.Answer{Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := hc.Do(req)
	if err != nil {
		return fbtest.Answer{Err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return fbtest.Answer{Status: resp.StatusCode, Body: string(b), Header: resp.Header, Err: err}
}
