package gateway_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/openapi"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// TestREADMEExamples replays every curl example of the README, in order,
// against the demo database and checks the documented answer byte for byte.
func TestREADMEExamples(t *testing.T) {
	readme := fbtest.Docs(t, "../..")
	examples := openapi.ExamplesFromREADME(readme)
	if len(examples) < 9 {
		t.Fatalf("found %d examples in the README", len(examples))
	}
	// The demo instance as make run serves it, with its access document, on
	// the test database.
	demo, err := tenants.LoadFile("../../infra/instances.demo.json")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := demo.Lookup(context.Background(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	inst.Connection = fbtest.Demo(t)
	fbtest.ReadmeStart(t, inst.Connection)
	// Served with the demo catalog, as make run serves it.
	cat, err := catalog.LoadFile("../../infra/catalog.demo.json")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, gateway.Config{}, map[string]any{"demo": inst})
	h := gateway.New(gateway.Config{}, cat, fbtest.DemoAccess(t, "../.."), e.src, e.db, slog.New(slog.DiscardHandler))
	for _, ex := range examples {
		auth, p, body, want := ex.Authorization, ex.Path, ex.Request, ex.Answer
		req := httptest.NewRequest(http.MethodPost, p, strings.NewReader(body))
		req.Header.Set("Authorization", auth)
		req.Header.Set("Content-Type", "application/json")
		for _, h := range ex.Headers {
			name, value, _ := strings.Cut(h, ": ")
			req.Header.Add(name, value)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if got := rec.Body.String(); got != want {
			t.Errorf("POST %s %s\n got  %s\n want %s", p, body, got, want)
		}
	}
}
