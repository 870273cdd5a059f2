package gateway_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/gateway"
)

// streamClient sees the bytes as sent: no transparent gzip.
var streamClient = &http.Client{Transport: &http.Transport{DisableCompression: true}}

// fetched is an answer as a client reads it.
type fetched struct {
	resp    *http.Response
	body    []byte
	readErr error
	ttfb    time.Duration
	took    time.Duration // to the answer's last byte
}

func fetch(t testing.TB, url, body string, header http.Header) fetched {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	start := time.Now()
	resp, err := streamClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var f fetched
	f.resp = resp
	first := make([]byte, 1)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatalf("no first byte: %v", err)
	}
	f.ttfb = time.Since(start)
	rest, err := io.ReadAll(resp.Body)
	f.body, f.readErr, f.took = append(first, rest...), err, time.Since(start)
	return f
}

// TestStreamingReads: a read's answer past the threshold streams (chunked,
// no Content-Length), whole and exact, gzip-encoded when asked; one within
// it is byte for byte what a handler that never streams answers; a failure
// after the first byte leaves the client a body that is not JSON and a
// connection that ends in error.
func TestStreamingReads(t *testing.T) {
	demo := fbtest.Demo(t)
	fbtest.CreateList(t, demo)
	setupRows(t, demo)
	instances := map[string]any{"demo": anonymous(demo)}
	e := newEnv(t, gateway.Config{StreamAbove: gateway.DefaultStreamAbove}, instances)
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	whole := newEnv(t, gateway.Config{}, instances)
	url := srv.URL + path("demo", "executequery")
	list := func(clave string, n int) string { return fmt.Sprintf(`{"CLAVE":%q,"N":"%d"}`, clave, n) }

	t.Run("within the threshold, as before", func(t *testing.T) {
		for _, body := range []string{list("Get_Lista", 1000), `{"CLAVE":"Get_Filas_100","N":"101"}`, `{"CLAVE":"Get_Lista"}`} {
			f := fetch(t, url, body, http.Header{"Accept-Encoding": {"gzip"}})
			before := whole.post(t, path("demo", "executequery"), body)
			if f.readErr != nil || f.resp.StatusCode != before.Status || string(f.body) != before.Raw {
				t.Fatalf("%s: %d %v, %d bytes; before: %d, %d bytes", body, f.resp.StatusCode, f.readErr, len(f.body), before.Status, len(before.Raw))
			}
			if f.resp.ContentLength != int64(len(f.body)) || f.resp.Header.Get("Content-Encoding") != "" {
				t.Fatalf("%s: Content-Length %d, Content-Encoding %q", body, f.resp.ContentLength, f.resp.Header.Get("Content-Encoding"))
			}
		}
	})

	const n = 100_000
	var raw []byte
	t.Run("100,000 rows", func(t *testing.T) {
		f := fetch(t, url, list("Get_Lista", n), nil)
		if f.readErr != nil || f.resp.StatusCode != 200 || f.resp.ContentLength != -1 || len(f.resp.TransferEncoding) == 0 {
			t.Fatalf("%d %v, Content-Length %d, Transfer-Encoding %v\n%s", f.resp.StatusCode, f.readErr, f.resp.ContentLength, f.resp.TransferEncoding, e.log.String())
		}
		fbtest.CheckList(t, f.body, n)
		// Streamed, not sent whole: the first byte leaves with the first
		// megabyte, a thirtieth of the answer. Measured against the whole
		// read, so a slow machine (the race detector) slows both.
		if f.ttfb > f.took/4 {
			t.Fatalf("first byte after %s of %s", f.ttfb, f.took)
		}
		raw = f.body
		t.Logf("%d bytes, first byte after %s of %s", len(raw), f.ttfb.Round(time.Millisecond), f.took.Round(time.Millisecond))
	})

	t.Run("gzip", func(t *testing.T) {
		f := fetch(t, url, list("Get_Lista", n), http.Header{"Accept-Encoding": {"br;q=1.0, gzip;q=0.8"}})
		if f.readErr != nil || f.resp.Header.Get("Content-Encoding") != "gzip" || f.resp.Header.Get("Vary") != "Accept-Encoding" {
			t.Fatalf("%v %v", f.readErr, f.resp.Header)
		}
		zr, err := gzip.NewReader(bytes.NewReader(f.body))
		if err != nil {
			t.Fatal(err)
		}
		plain, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(plain, raw) {
			t.Fatalf("decoded: %v, %d bytes, want the %d of the plain answer", err, len(plain), len(raw))
		}
		t.Logf("%d bytes gzipped, from %d", len(f.body), len(plain))
		if f := fetch(t, url, list("Get_Lista", 10_000), http.Header{"Accept-Encoding": {"gzip;q=0, *"}}); f.resp.Header.Get("Content-Encoding") != "" {
			t.Fatal("gzip refused with q=0, and sent")
		}
	})

	t.Run("max_rows past the first byte", func(t *testing.T) {
		f := fetch(t, url, list("Get_Lista_50000", n), nil)
		if f.resp.StatusCode != 200 || f.readErr == nil || json.Valid(f.body) {
			t.Fatalf("%d, read error %v, %d bytes, valid JSON %v", f.resp.StatusCode, f.readErr, len(f.body), json.Valid(f.body))
		}
		if !strings.Contains(e.log.String(), "outcome=cut") && !strings.Contains(e.log.String(), "streamed answer cut") {
			t.Fatalf("no cut in the log: %s", e.log.String())
		}
	})

	t.Run("the procedure's refusal past the first byte", func(t *testing.T) {
		f := fetch(t, url, list("Get_Lista_Falla", n), nil)
		if f.resp.StatusCode != 200 || f.readErr == nil || json.Valid(f.body) {
			t.Fatalf("%d, read error %v, %d bytes, valid JSON %v", f.resp.StatusCode, f.readErr, len(f.body), json.Valid(f.body))
		}
		if !strings.Contains(e.log.String(), "LA LISTA 100000 NO TERMINA") {
			t.Fatalf("the refusal is not in the log: %s", e.log.String())
		}
		// Within the threshold the refusal is the answer, as for any read.
		r := whole.post(t, path("demo", "executequery"), list("Get_Lista_Falla", 10))
		if r.Status != 200 || r.Body.ExExecSQL == nil || !strings.Contains(*r.Body.ExExecSQL, "***LA LISTA 10 NO TERMINA***") || r.Body.Data != nil {
			t.Fatalf("10 rows: %d %s", r.Status, r.Raw)
		}
	})
}

// TestACutReadIsNeverAWholeAnswer: a server that closes the connection
// while a read's rows arrive (a restart, a DBA's kill) never leaves the
// client a whole answer with some of the rows: before the first byte the
// read runs again on a new connection or answers 503, after it the body is
// left unended. The driver passes the socket's end up as the end of the
// rows, so a streamed read answered 200 with the rows so far, whole and
// valid (found by a review that cut the link mid-read).
func TestACutReadIsNeverAWholeAnswer(t *testing.T) {
	demo := fbtest.Demo(t)
	fbtest.CreateList(t, demo)
	link := fbtest.NewLink(t, demo, 0)
	e := newEnv(t, gateway.Config{StreamAbove: gateway.DefaultStreamAbove}, map[string]any{"demo": anonymous(link.Through(demo))})
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	url := srv.URL + path("demo", "executequery")
	list := func(n int) string { return fmt.Sprintf(`{"CLAVE":"Get_Lista","N":"%d"}`, n) }
	if f := fetch(t, url, list(1), nil); f.resp.StatusCode != 200 {
		t.Fatalf("warming up: %d %s", f.resp.StatusCode, f.body)
	}

	t.Run("answered whole", func(t *testing.T) {
		// Cut at several points of the rows: a read the gateway runs
		// again on a new connection answers them all, one it cannot
		// answers 503; never some of them.
		for _, after := range []int64{8_000, 20_000, 50_000, 120_000} {
			link.CloseAfter(after)
			f := fetch(t, url, list(1000), nil)
			rows := strings.Count(string(f.body), `"ID":`)
			if !(f.resp.StatusCode == 200 && rows == 1000 && json.Valid(f.body)) && !(f.resp.StatusCode == 503 && strings.Contains(string(f.body), `"cod_error":1201`)) {
				t.Fatalf("cut after %d bytes: %d, %d bytes, %d rows", after, f.resp.StatusCode, len(f.body), rows)
			}
		}
	})
	t.Run("streamed", func(t *testing.T) {
		link.CloseAfter(4 << 20)
		f := fetch(t, url, list(100_000), nil)
		if f.resp.StatusCode != 200 || f.readErr == nil || json.Valid(f.body) {
			t.Fatalf("%d, read error %v, %d bytes, valid JSON %v", f.resp.StatusCode, f.readErr, len(f.body), json.Valid(f.body))
		}
	})
	// The pool serves on.
	if f := fetch(t, url, list(1000), nil); f.resp.StatusCode != 200 || !json.Valid(f.body) {
		t.Fatalf("after the cuts: %d, %d bytes", f.resp.StatusCode, len(f.body))
	}
}

// TestStreamDeadline: a client that stops reading holds its stream no
// longer than the stream's deadline; it then gets an unended body that is
// not JSON, and the server serves others meanwhile.
func TestStreamDeadline(t *testing.T) {
	demo := fbtest.Demo(t)
	fbtest.CreateList(t, demo)
	e := newEnv(t, gateway.Config{StreamAbove: 64 << 10, StreamTimeout: time.Second}, map[string]any{"demo": anonymous(demo)})
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+path("demo", "executequery"), strings.NewReader(`{"CLAVE":"Get_Lista","N":"200000"}`))
	resp, err := streamClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	time.Sleep(2500 * time.Millisecond)
	body, err := io.ReadAll(resp.Body)
	if err == nil || json.Valid(body) {
		t.Fatalf("after the deadline: read error %v, %d bytes, valid JSON %v", err, len(body), json.Valid(body))
	}
	other := fetch(t, srv.URL+path("demo", "executequery"), `{"CLAVE":"Get_Lista","N":"10"}`, nil)
	if other.readErr != nil || other.resp.StatusCode != 200 {
		t.Fatalf("the next request: %d %v", other.resp.StatusCode, other.readErr)
	}
	t.Logf("cut after %d bytes: %v", len(body), err)
}

// TestSlowClientsDoNotPauseTheirInstance: while clients that do not read
// hold every connection of their instance's pool with their streams, other
// calls wait until their deadline and are told the connections are busy,
// retry in a moment; the database is well, so the breaker stays closed,
// and a call is served as soon as a connection is free.
func TestSlowClientsDoNotPauseTheirInstance(t *testing.T) {
	demo := fbtest.Demo(t)
	fbtest.CreateList(t, demo)
	const timeout = 400 * time.Millisecond
	e := newEnvOpts(t, gateway.Config{Timeout: timeout, StreamAbove: 64 << 10, StreamTimeout: time.Minute, Breaker: gateway.BreakerConfig{Failures: 3, CoolDown: time.Minute}},
		firebird.Options{MaxConns: 1}, map[string]any{"demo": anonymous(demo)})
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	url := srv.URL + path("demo", "executequery")
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"CLAVE":"Get_Lista","N":"200000"}`))
	slow, err := streamClient.Do(req) // and never read
	if err != nil || slow.StatusCode != 200 {
		t.Fatalf("the slow client's stream: %v %v", err, slow)
	}
	for i := range 5 {
		f := fetch(t, url, `{"CLAVE":"Get_Lista","N":"1"}`, nil)
		if f.resp.StatusCode != 503 || !strings.Contains(string(f.body), `"cod_error":1201`) || !strings.Contains(string(f.body), "busy") || f.resp.Header.Get("Retry-After") == "" {
			t.Fatalf("call %d while the pool is held: %d %s", i+1, f.resp.StatusCode, f.body)
		}
	}
	slow.Body.Close() // the slow client leaves: its stream ends, its connection is free
	start := time.Now()
	for {
		f := fetch(t, url, `{"CLAVE":"Get_Lista","N":"1"}`, nil)
		if f.resp.StatusCode == 200 {
			break
		}
		if strings.Contains(string(f.body), `"cod_error":1205`) || time.Since(start) > 5*time.Second {
			t.Fatalf("after the slow client left: %d %s", f.resp.StatusCode, f.body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
