package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/gateway"
)

// TestMethodNotAllowedNamesTheRoutesMethod: the 405 of each route says the
// method that route serves, not always POST.
func TestMethodNotAllowedNamesTheRoutesMethod(t *testing.T) {
	e := newEnv(t, gateway.Config{OpenAPI: true}, map[string]any{"demo": anonymous(fbtest.Demo(t))})
	tests := []struct{ method, path, allow string }{
		{http.MethodPost, "/demo/health", http.MethodGet},
		{http.MethodPost, "/demo/openapi.json", http.MethodGet},
		{http.MethodGet, path("demo", "executequery"), http.MethodPost},
		{http.MethodDelete, path("demo", "execute"), http.MethodPost},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			r := do(t, e.h, tt.method, tt.path, "")
			if r.Status != http.StatusMethodNotAllowed || *r.Body.CodError != int(erp.CodeMethod) || r.Header.Get("Allow") != tt.allow {
				t.Fatalf("HTTP %d Allow %q %s; want 405 Allow %q", r.Status, r.Header.Get("Allow"), r.Raw, tt.allow)
			}
		})
	}
	if r := do(t, e.h, http.MethodGet, "/demo/nothing", ""); r.Status != http.StatusNotFound || r.Header.Get("Allow") != "" {
		t.Fatalf("unknown path: HTTP %d Allow %q", r.Status, r.Header.Get("Allow"))
	}
}

// TestOnlyTheDeploymentsPaths: where API Gateway does not route (the local
// server), a path is served only as a deployment has it: extra leading
// segments are 404, and a base path is a setting.
func TestOnlyTheDeploymentsPaths(t *testing.T) {
	body := `{"CLAVE":"Get_Terceros","CODIGO":"800000000"}`
	plain := newEnv(t, gateway.Config{}, map[string]any{"demo": anonymous(fbtest.Demo(t))})
	mapped := newEnv(t, gateway.Config{BasePath: "/erp/v1"}, map[string]any{"demo": anonymous(fbtest.Demo(t))})
	tests := []struct {
		name   string
		h      http.Handler
		path   string
		status int
	}{
		{"the route", plain.h, path("demo", "executequery"), 200},
		{"extra leading segments", plain.h, "/x/y" + path("demo", "executequery"), 404},
		{"a stage's segment", plain.h, "/prod" + path("demo", "executequery"), 404},
		{"under the base path", mapped.h, "/erp/v1" + path("demo", "executequery"), 200},
		{"without the base path", mapped.h, path("demo", "executequery"), 404},
		{"under another base path", mapped.h, "/erp/v2" + path("demo", "executequery"), 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if r := do(t, tt.h, http.MethodPost, tt.path, body); r.Status != tt.status {
				t.Fatalf("HTTP %d %s, want %d", r.Status, r.Raw, tt.status)
			}
		})
	}
}

// TestRefusedParameterLogsItsClave: a request refused for one of its
// parameters names its operation in the log line; one whose CLAVE is not an
// operation does not echo what was sent.
func TestRefusedParameterLogsItsClave(t *testing.T) {
	e := newEnv(t, gateway.Config{}, map[string]any{"demo": anonymous(fbtest.Demo(t))})
	tests := []struct{ name, body, logged string }{
		{"missing parameter", `{"CLAVE":"Get_Terceros"}`, `clave=Get_Terceros `},
		{"value too long", `{"CLAVE":"Get_Terceros","CODIGO":"1234567890123456"}`, `clave=Get_Terceros `},
		{"unknown CLAVE", `{"CLAVE":"Nada_De_Nada"}`, `clave="" `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.log.Reset()
			if r := e.post(t, path("demo", "executequery"), tt.body); r.Status != http.StatusBadRequest {
				t.Fatalf("HTTP %d %s", r.Status, r.Raw)
			}
			if !strings.Contains(e.log.String(), tt.logged) {
				t.Fatalf("log line without %s:\n%s", tt.logged, e.log.String())
			}
		})
	}
}
