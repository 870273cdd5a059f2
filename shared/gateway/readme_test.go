package gateway_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
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
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
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
	// The Set_Terceros example creates this third party; start without it so
	// the test can run again on the same database.
	admin := fbtest.Open(t, fbtest.Admin(t, inst.Connection))
	if _, err := admin.ExecContext(context.Background(), "DELETE FROM TERCEROS WHERE CODIGO = '901234567'"); err != nil {
		t.Fatal(err)
	}
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
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if got := rec.Body.String(); got != want {
			t.Errorf("POST %s %s\n got  %s\n want %s", p, body, got, want)
		}
	}
}
