package gateway_test

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/erp-gateway/gateway/shared/access"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// BenchmarkGetReferencias compares one Get_Referencias (a 50-column row)
// through the whole handler with the best the driver can do for the same
// procedure in the same run: one statement prepared on a warm connection and
// reused. `make bench` prints the ratio.
func BenchmarkGetReferencias(b *testing.B) {
	// raw-deadline adds the per-call deadline the handler always sets
	// (GATEWAY_DB_TIMEOUT), which costs the driver socket deadlines and a
	// watcher on every round trip.
	for _, bc := range []struct {
		name     string
		deadline bool
	}{{"raw", false}, {"raw-deadline", true}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			conn, err := fbtest.Open(b, fbtest.Demo(b)).Conn(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			stmt, err := conn.PrepareContext(ctx, "SELECT * FROM REST_SELECT_REFERENCIA(?)")
			if err != nil {
				b.Fatal(err)
			}
			defer stmt.Close()
			b.ReportAllocs()
			for b.Loop() {
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if bc.deadline {
					ctx, cancel = context.WithTimeout(ctx, gateway.DefaultTimeout)
				}
				rawCall(b, ctx, stmt)
				cancel()
			}
		})
	}
	b.Run("handler", func(b *testing.B) {
		e := newEnv(b, gateway.Config{}, map[string]any{"demo": tenants.Instance{Connection: fbtest.Demo(b)}})
		token := fbtest.Token(b, e.acc, "demo")
		// As in production, one JSON line per request; written nowhere, so
		// the benchmark does not measure a growing in-memory log.
		e.h = gateway.New(gateway.Config{}, e.cat, access.Static(e.acc), e.src, e.db, slog.New(slog.NewJSONHandler(io.Discard, nil)))
		const body = `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`
		p := path("demo", "executequery")
		b.ReportAllocs()
		for b.Loop() {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, p, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			e.h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"data":[{"CODIGO":"REF0001"`) {
				b.Fatalf("%d %s", rec.Code, rec.Body.String())
			}
		}
	})
}

func rawCall(b *testing.B, ctx context.Context, stmt *sql.Stmt) {
	rows, err := stmt.QueryContext(ctx, "REF0001")
	if err != nil {
		b.Fatal(err)
	}
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	n := 0
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			b.Fatal(err)
		}
		n++
	}
	if err := rows.Close(); err != nil || n != 1 {
		b.Fatalf("%d rows, %v", n, err)
	}
}
