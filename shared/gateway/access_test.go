package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/tenants"
)

func TestAccessControl(t *testing.T) {
	tokenA, _ := tenants.NewToken()
	tokenB, _ := tenants.NewToken()
	e := newEnv(t, gateway.Config{}, map[string]any{
		"a":      tenants.Instance{Config: fbtest.Demo(t), Tokens: []string{tenants.HashToken(tokenA)}},
		"b":      tenants.Instance{Config: fbtest.Other(t), Tokens: []string{tenants.HashToken(tokenB)}},
		"closed": tenants.Instance{Config: fbtest.Demo(t)}, // no tokens, no opt-out: nothing opens it
		"legacy": anonymous(fbtest.Demo(t)),
	})
	const body = `{"CLAVE":"Get_Terceros","CODIGO":"800000000"}`
	send := func(instance, auth string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, path(instance, "executequery"), strings.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		return rec
	}
	tests := []struct {
		name, instance, auth string
		status               int
	}{
		{"own token", "a", "Bearer " + tokenA, 200},
		{"own token, other database", "b", "Bearer " + tokenB, 200},
		{"missing token", "a", "", 401},
		{"wrong token", "a", "Bearer erpgw_not-a-real-token", 401},
		{"token of instance b on instance a", "a", "Bearer " + tokenB, 401},
		{"token of instance a on instance b", "b", "Bearer " + tokenA, 401},
		{"token as Basic credentials", "a", "Basic " + tokenA, 401},
		{"instance without tokens", "closed", "Bearer " + tokenA, 401},
		{"unknown instance with a valid token elsewhere", "nadie", "Bearer " + tokenA, 401},
		{"unknown instance without a token", "nadie", "", 401},
		{"anonymous opt-out", "legacy", "", 200},
	}
	var refusal string
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := e.db.calls.Load()
			rec := send(tt.instance, tt.auth)
			if rec.Code != tt.status {
				t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
			}
			if tt.status == 200 {
				if !strings.Contains(rec.Body.String(), `"data":[{"CODIGO":"800000000"`) {
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
