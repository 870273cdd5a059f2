package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/access"
	"github.com/erp-gateway/gateway/shared/erp"
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
	revoked, revokedID, err := e.acc.Mint("r", erp.Limits{})
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
	h := gateway.New(gateway.Config{}, e.cat, access.Static(e.acc.Document), src, e.db, slog.New(slog.DiscardHandler))

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

// TestTokenLimits: a token narrowed to reads or to CLAVEs runs only those,
// and is told which CLAVE it may not run before anything else about its
// body; an expired token is told it expired, without a lookup; a token
// minted before limits keeps every right. Each request's log line names
// the token by its id.
func TestTokenLimits(t *testing.T) {
	e := newEnv(t, gateway.Config{}, map[string]any{"a": tenants.Instance{Connection: fbtest.Demo(t)}})
	src := &countingInstances{Instances: e.src}
	h := gateway.New(gateway.Config{}, e.cat, access.Static(e.acc.Document), src, e.db, slog.New(slog.NewTextHandler(&lockedWriter{w: e.log}, nil)))
	admin := fbtest.Open(t, fbtest.Admin(t, fbtest.Demo(t)))
	mint := func(l erp.Limits) (string, string) {
		token, id, err := e.acc.Mint("a", l)
		if err != nil {
			t.Fatal(err)
		}
		return token, id
	}
	full, fullID := mint(erp.Limits{})
	reads, readsID := mint(erp.Limits{ReadOnly: true})
	one, oneID := mint(erp.Limits{Claves: []string{"Get_Terceros", "Set_Pago"}, Expires: time.Now().Add(time.Hour)})
	expired, expiredID := mint(erp.Limits{Claves: []string{"Get_Terceros"}, Expires: time.Now().Add(-time.Minute)})

	get := `{"CLAVE":"Get_Terceros","CODIGO":"800000000"}`
	refs := `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`
	tests := []struct {
		name, token, id, endpoint, body string
		status                          int
		code                            erp.Code
		want                            string // in the body
	}{
		{"unlimited, a read", full, fullID, "executequery", get, 200, 0, `"CODIGO":"800000000"`},
		{"unlimited, a write", full, fullID, "execute", setTerceros(newCode()), 200, 0, `"data":[{`},
		{"read-only, a read", reads, readsID, "executequery", refs, 200, 0, `"data":[{`},
		{"read-only, a write", reads, readsID, "execute", setTerceros("W-READONLY"), 403, erp.CodeOutOfScope, "may not run CLAVE Set_Terceros: it is limited to reads"},
		{"read-only, a write with a bad body", reads, readsID, "execute", `{"CLAVE":"Set_Terceros","NADA":1}`, 403, erp.CodeOutOfScope, "CLAVE Set_Terceros"},
		{"read-only, a write sent to executequery", reads, readsID, "executequery", setTerceros("W-READONLY"), 403, erp.CodeOutOfScope, "CLAVE Set_Terceros"},
		{"read-only, an unknown CLAVE", reads, readsID, "execute", `{"CLAVE":"Set_Nada"}`, 400, erp.CodeClaveUnknown, "Set_Nada"},
		{"CLAVEs, one of them", one, oneID, "executequery", get, 200, 0, `"CODIGO":"800000000"`},
		{"CLAVEs, another read", one, oneID, "executequery", refs, 403, erp.CodeOutOfScope, "may not run CLAVE Get_Referencias: it is limited to Get_Terceros, Set_Pago"},
		{"CLAVEs, another write", one, oneID, "execute", setTerceros("W-CLAVES"), 403, erp.CodeOutOfScope, "CLAVE Set_Terceros"},
		{"expired", expired, expiredID, "executequery", get, 401, erp.CodeTokenExpired, "this token expired at "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookups := src.lookups.Load()
			e.log.Reset()
			req := httptest.NewRequest(http.MethodPost, path("a", tt.endpoint), strings.NewReader(tt.body))
			req.Header.Set("Authorization", "Bearer "+tt.token)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			body := rec.Body.String()
			if rec.Code != tt.status || !strings.Contains(body, fmt.Sprintf(`"cod_error":%d`, tt.code)) || !strings.Contains(body, tt.want) {
				t.Fatalf("%d %s", rec.Code, body)
			}
			if tt.status == 401 {
				if rec.Header().Get("WWW-Authenticate") == "" || src.lookups.Load() != lookups {
					t.Fatal("an expired token: no challenge, or a lookup")
				}
			}
			line := e.log.String()
			if !strings.Contains(line, "token_id="+tt.id) || strings.Contains(line, tt.token) {
				t.Fatalf("log line without the token id, or with the token: %s", line)
			}
		})
	}
	for _, code := range []string{"W-READONLY", "W-CLAVES"} {
		if n := count(t, admin, "SELECT COUNT(*) FROM TERCEROS WHERE CODIGO = ?", code); n != 0 {
			t.Fatalf("a refused write wrote %s", code)
		}
	}
	// A wrong token's id is the caller's say-so: never logged.
	e.log.Reset()
	forged := strings.Replace(reads, readsID, strings.Repeat("0", 32), 1)
	req := httptest.NewRequest(http.MethodPost, path("a", "executequery"), strings.NewReader(get))
	req.Header.Set("Authorization", "Bearer "+forged)
	h.ServeHTTP(httptest.NewRecorder(), req)
	if strings.Contains(e.log.String(), "token_id") {
		t.Fatalf("a forged token's id was logged: %s", e.log.String())
	}
}
