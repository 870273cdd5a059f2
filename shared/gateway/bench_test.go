package gateway_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

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
			stmt := rawStatement(b)
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
		e.h = gateway.New(gateway.Config{}, e.cat, access.Static(e.acc.Document), e.src, e.db, slog.New(slog.NewJSONHandler(io.Discard, nil)))
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

// BenchmarkBatch compares 100 reads in one batch through the handler with
// the raw driver's 100 executes of one prepared statement on one warm
// connection; `make bench` prints batch/raw.
func BenchmarkBatch(b *testing.B) {
	const n = 100
	codes := make([]string, n)
	calls := make([]string, n)
	for i := range n {
		codes[i] = fmt.Sprintf("REF%04d", i%30+1)
		calls[i] = `{"CLAVE":"Get_Referencias","CODIGO":"` + codes[i] + `"}`
	}
	b.Run("raw-100", func(b *testing.B) {
		ctx := context.Background()
		stmt := rawStatement(b)
		for b.Loop() {
			for _, code := range codes {
				rawCallOf(b, ctx, stmt, code)
			}
		}
	})
	b.Run("batch-100", func(b *testing.B) {
		e := newEnv(b, gateway.Config{}, map[string]any{"demo": tenants.Instance{Connection: fbtest.Demo(b)}})
		token := fbtest.Token(b, e.acc, "demo")
		e.h = gateway.New(gateway.Config{}, e.cat, access.Static(e.acc.Document), e.src, e.db, slog.New(slog.NewJSONHandler(io.Discard, nil)))
		body := "[" + strings.Join(calls, ",") + "]"
		p := path("demo", "executequery")
		for b.Loop() {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, p, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			e.h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK || strings.Count(rec.Body.String(), `"data":[{"CODIGO":"REF`) != n {
				b.Fatalf("%d %.300s", rec.Code, rec.Body.String())
			}
		}
	})
}

// rawStatement is the raw driver's best: Get_Referencias' statement,
// prepared once on one warm connection of its own.
func rawStatement(b *testing.B) *sql.Stmt {
	ctx := context.Background()
	conn, err := fbtest.Open(b, fbtest.Demo(b)).Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	stmt, err := conn.PrepareContext(ctx, "SELECT * FROM REST_SELECT_REFERENCIA(?)")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stmt.Close() })
	return stmt
}

func rawCall(b *testing.B, ctx context.Context, stmt *sql.Stmt) { rawCallOf(b, ctx, stmt, "REF0001") }

func rawCallOf(b *testing.B, ctx context.Context, stmt *sql.Stmt, code string) {
	rows, err := stmt.QueryContext(ctx, code)
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

// BenchmarkWrite compares a write kept under an idempotency key with the
// same write without one, in the same run: the handler's time and the
// Firebird server's CPU per write (from /proc). Keyed and unkeyed writes
// alternate in blocks of writeBlock, so a drift of the machine (this one
// shares its disk and CPU) weighs on both alike; the server's CPU is read
// at each block's end, its clock ticking every 10 ms. Two writes:
// Set_Terceros (the specification's: a check, an insert into a table with
// its indexes, a 30-column read-back) and Set_Pago (a test write about as
// small as a write gets: one insert, an indexed count), where the key's
// work weighs the most. It reports keyed/unkeyed-time and
// keyed/unkeyed-cpu, which `make bench` averages.
func BenchmarkWrite(b *testing.B) {
	cfg := fbtest.Demo(b)
	setupKeys(b, cfg)
	writes := []struct {
		name string
		body func(code string) string
		want func(code string) string
	}{
		{"terceros", func(code string) string { return setTerceros(code) }, func(code string) string { return `"data":[{"CODIGO":"` + code + `"` }},
		{"pago", func(code string) string { return `{"CLAVE":"Set_Pago","CODIGO":"` + code + `","VALOR":1}` },
			func(code string) string { return `"data":[{"CODIGO":"` + code + `","VECES":1}` }},
	}
	for _, w := range writes {
		b.Run(w.name, func(b *testing.B) {
			e := newEnv(b, gateway.Config{}, map[string]any{"demo": tenants.Instance{Connection: cfg, Idempotency: true}})
			token := fbtest.Token(b, e.acc, "demo")
			e.h = gateway.New(gateway.Config{}, e.cat, access.Static(e.acc.Document), e.src, e.db, slog.New(slog.NewJSONHandler(io.Discard, nil)))
			p := path("demo", "execute")
			run, i := time.Now().UnixNano()%1e8, 0
			write := func(keyed bool) {
				// A new record each time, so every write does the same
				// work.
				i++
				code := fmt.Sprintf("%d%d%d", run, map[bool]int{false: 1, true: 2}[keyed], i)
				req := httptest.NewRequest(http.MethodPost, p, strings.NewReader(w.body(code)))
				req.Header.Set("Authorization", "Bearer "+token)
				if keyed {
					req.Header.Set("Idempotency-Key", "bench-"+code)
				}
				rec := httptest.NewRecorder()
				e.h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), w.want(code)) {
					b.Fatalf("%d %s", rec.Code, rec.Body.String())
				}
			}
			// Warm connections with their statements prepared.
			write(false)
			write(true)
			var took, cpu [2]time.Duration // unkeyed, keyed
			var n [2]int
			keyed, last := 0, serverCPU(b)
			for b.Loop() {
				if n[0]+n[1] > 0 && (n[0]+n[1])%writeBlock == 0 {
					now := serverCPU(b)
					cpu[keyed], last, keyed = cpu[keyed]+now-last, now, 1-keyed
				}
				began := time.Now()
				write(keyed == 1)
				took[keyed] += time.Since(began)
				n[keyed]++
			}
			cpu[keyed] += serverCPU(b) - last
			if n[0] == 0 || n[1] == 0 {
				return // a run too short to compare (-benchtime below 2 blocks)
			}
			per := func(d time.Duration, k int) float64 { return float64(d.Microseconds()) / 1000 / float64(n[k]) }
			b.ReportMetric(per(took[0], 0), "unkeyed-ms/op")
			b.ReportMetric(per(took[1], 1), "keyed-ms/op")
			b.ReportMetric(per(cpu[0], 0), "unkeyed-server-ms/op")
			b.ReportMetric(per(cpu[1], 1), "keyed-server-ms/op")
			b.ReportMetric(per(took[1], 1)/per(took[0], 0), "keyed/unkeyed-time")
			b.ReportMetric(per(cpu[1], 1)/per(cpu[0], 0), "keyed/unkeyed-cpu")
		})
	}
}

// writeBlock is how many writes of a kind BenchmarkWrite runs in a row:
// about 100 ms of the server's CPU, ten ticks of its clock.
const writeBlock = 100

// serverCPU is the CPU time the Firebird server processes have used.
func serverCPU(b testing.TB) time.Duration {
	var ticks int64
	for _, pid := range fbtest.FirebirdPIDs(b) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			b.Fatal(err)
		}
		// Fields after the command's closing parenthesis: utime and stime
		// are the 12th and 13th.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + s
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// BenchmarkBigRead: a 20,000-row price list (about 6 MB) read by 4 clients
// at once over HTTP, streamed (past 1 MB, chunked) and sent whole, in
// alternating rounds of the same run. It reports streamed/whole-throughput,
// which must stay at 0.9 or more.
func BenchmarkBigRead(b *testing.B) {
	demo := fbtest.Demo(b)
	fbtest.CreateList(b, demo)
	instances := map[string]any{"demo": anonymous(demo)}
	urls := map[bool]string{}
	for _, streams := range []bool{false, true} {
		cfg := gateway.Config{MaxAnswer: 64 << 20}
		if streams {
			cfg.StreamAbove = gateway.DefaultStreamAbove
		}
		srv := httptest.NewServer(newEnv(b, cfg, instances).h)
		b.Cleanup(srv.Close)
		urls[streams] = srv.URL + path("demo", "executequery")
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	read := func(url string) {
		resp, err := client.Post(url, "application/json", strings.NewReader(`{"CLAVE":"Get_Lista","N":"20000"}`))
		if err != nil {
			b.Error(err)
			return
		}
		defer resp.Body.Close()
		if n, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != 200 || n < 5<<20 {
			b.Errorf("%d, %d bytes, %v", resp.StatusCode, n, err)
		}
	}
	// round is 4 clients reading at once, one read each.
	round := func(url string) time.Duration {
		start := time.Now()
		done := make(chan struct{})
		for range 4 {
			go func() { read(url); done <- struct{}{} }()
		}
		for range 4 {
			<-done
		}
		return time.Since(start)
	}
	round(urls[false])
	round(urls[true])
	// Each op is a round of each, the first alternating, so drift on a
	// noisy machine falls on both alike.
	var whole, streamed time.Duration
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			whole += round(urls[false])
			streamed += round(urls[true])
		} else {
			streamed += round(urls[true])
			whole += round(urls[false])
		}
	}
	b.ReportMetric(float64(whole)/float64(streamed), "streamed/whole-throughput")
}
