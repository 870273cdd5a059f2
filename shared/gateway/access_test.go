package gateway_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/erp-gateway/gateway/shared/access"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// countingInstances counts the lookups that reach the instance source: the
// per-instance work a stranger must not cause.
type countingInstances struct {
	gateway.Instances
	lookups atomic.Int64
}

func (c *countingInstances) Lookup(ctx context.Context, name string) (tenants.Instance, error) {
	c.lookups.Add(1)
	return c.Instances.Lookup(ctx, name)
}

func TestAccessControl(t *testing.T) {
	e := newEnv(t, gateway.Config{}, map[string]any{
		"a":      tenants.Instance{Connection: fbtest.Demo(t)},
		"b":      tenants.Instance{Connection: fbtest.Other(t)},
		"legacy": anonymous(fbtest.Demo(t)),
	})
	tokenA, tokenB := fbtest.Token(t, e.acc, "a"), fbtest.Token(t, e.acc, "b")
	kept := fbtest.Token(t, e.acc, "r")
	revoked, revokedID, err := e.acc.Mint("r", "")
	if err != nil {
		t.Fatal(err)
	}
	// Instance r revokes one of its two tokens; the id is pasted in upper
	// case, and still revokes.
	docs, err := json.Marshal(map[string]tenants.Instance{
		"a":      {Connection: fbtest.Demo(t)},
		"b":      {Connection: fbtest.Other(t)},
		"r":      {Connection: fbtest.Demo(t), RevokedTokens: []string{strings.ToUpper(revokedID)}},
		"legacy": {Connection: fbtest.Demo(t)},
	})
	if err != nil {
		t.Fatal(err)
	}
	file, err := tenants.ParseFile(docs)
	if err != nil {
		t.Fatal(err)
	}
	src := &countingInstances{Instances: file}
	h := gateway.New(gateway.Config{}, e.cat, access.Static(e.acc), src, e.db, slog.New(slog.DiscardHandler))

	const body = `{"CLAVE":"Get_Terceros","CODIGO":"800000000"}`
	send := func(p string, auth []string, ctx context.Context) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, p, strings.NewReader(body))
		for _, a := range auth {
			req.Header.Add("Authorization", a)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	bg := context.Background()
	tests := []struct {
		name    string
		path    string
		auth    []string
		ctx     context.Context
		status  int
		lookups int64 // lookups the request may cause
	}{
		{"own token", path("a", "executequery"), []string{"Bearer " + tokenA}, bg, 200, 1},
		{"own token, other database", path("b", "executequery"), []string{"Bearer " + tokenB}, bg, 200, 1},
		{"missing token", path("a", "executequery"), nil, bg, 401, 0},
		{"wrong token", path("a", "executequery"), []string{"Bearer erpgw_not-a-real-token"}, bg, 401, 0},
		{"token of instance b on instance a", path("a", "executequery"), []string{"Bearer " + tokenB}, bg, 401, 0},
		{"token of instance a on instance b", path("b", "executequery"), []string{"Bearer " + tokenA}, bg, 401, 0},
		{"token as Basic credentials", path("a", "executequery"), []string{"Basic " + tokenA}, bg, 401, 0},
		{"two Authorization headers", path("a", "executequery"), []string{"Bearer " + tokenA, "Bearer " + tokenA}, bg, 401, 0},
		{"two Authorization headers, anonymous instance", path("legacy", "executequery"), []string{"Bearer x", "Bearer y"}, bg, 401, 0},
		{"unknown instance with a token of another", path("nadie", "executequery"), []string{"Bearer " + tokenA}, bg, 401, 0},
		{"unknown instance without a token", path("nadie", "executequery"), nil, bg, 401, 0},
		{"unknown instance with a token minted for its name", path("nadie", "executequery"), []string{"Bearer " + fbtest.Token(t, e.acc, "nadie")}, bg, 401, 1},
		{"a token of an instance that revoked another", path("r", "executequery"), []string{"Bearer " + kept}, bg, 200, 1},
		{"revoked token", path("r", "executequery"), []string{"Bearer " + revoked}, bg, 401, 1},
		{"anonymous instance", path("legacy", "executequery"), nil, bg, 200, 1},
		{"percent-encoded instance segment", "/x%2Fa" + base + "executequery", []string{"Bearer " + tokenA}, bg, 400, 0},
		{"instance API Gateway did not match", path("a", "executequery"), []string{"Bearer " + tokenA}, gateway.WithPathInstance(bg, "x/a"), 400, 0},
		{"instance API Gateway matched", path("a", "executequery"), []string{"Bearer " + tokenA}, gateway.WithPathInstance(bg, "a"), 200, 1},
	}
	var refusal string
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls, lookups := e.db.calls.Load(), src.lookups.Load()
			rec := send(tt.path, tt.auth, tt.ctx)
			if rec.Code != tt.status {
				t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
			}
			if n := src.lookups.Load() - lookups; n != tt.lookups {
				t.Fatalf("%d lookups, want %d", n, tt.lookups)
			}
			switch tt.status {
			case 200:
				if !strings.Contains(rec.Body.String(), `"data":[{"CODIGO":"800000000"`) {
					t.Fatalf("body %s", rec.Body.String())
				}
				return
			case 400:
				if !strings.Contains(rec.Body.String(), `"cod_error":1103`) {
					t.Fatalf("body %s", rec.Body.String())
				}
				return
			}
			// Every refusal is the same bytes, so none tells whether the
			// instance exists, and none reached a database.
			if refusal == "" {
				refusal = rec.Body.String()
			}
			if rec.Body.String() != refusal || rec.Header().Get("WWW-Authenticate") != `Bearer realm="erp-gateway"` {
				t.Fatalf("refusal %q (WWW-Authenticate %q), others were %q", rec.Body.String(), rec.Header().Get("WWW-Authenticate"), refusal)
			}
			if e.db.calls.Load() != calls {
				t.Fatal("a refused request reached the database")
			}
		})
	}
	if !strings.Contains(refusal, `"cod_error":1105`) {
		t.Fatalf("refusal %s", refusal)
	}
	if strings.Contains(e.log.String(), tokenA) || strings.Contains(e.log.String(), tokenB) {
		t.Fatal("a token reached the logs")
	}
}
