package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/gateway"
)

// BenchmarkGetReferencias compares one Get_Referencias (a 50-column row)
// through the whole handler with the raw driver call of the same procedure
// in the same run; `make bench` prints the ratio.
func BenchmarkGetReferencias(b *testing.B) {
	b.Run("raw", func(b *testing.B) {
		db := fbtest.Open(b, fbtest.Demo(b))
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			rows, err := db.QueryContext(ctx, "SELECT * FROM REST_SELECT_REFERENCIA(?)", "REF0001")
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
	})
	b.Run("handler", func(b *testing.B) {
		e := demoEnv(b, gateway.Config{})
		const body = `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`
		p := path("demo", "executequery")
		b.ReportAllocs()
		for b.Loop() {
			rec := httptest.NewRecorder()
			e.h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, p, strings.NewReader(body)))
			if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"data":[{"CODIGO":"REF0001"`) {
				b.Fatalf("%d %s", rec.Code, rec.Body.String())
			}
		}
	})
}
