package main_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// server is the real local server binary, started on a free port.
type server struct {
	base string
	cmd  *exec.Cmd
	out  *output
}

// output is what the server writes, read while it runs.
type output struct {
	mu sync.Mutex
	b  strings.Builder
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "localserver")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building the local server: %v\n%s", err, out)
	}
	return bin
}

func instancesFile(t *testing.T) string {
	t.Helper()
	data, err := json.Marshal(map[string]tenants.Instance{"demo": {Connection: fbtest.Demo(t)}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "instances.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// accessFile is an access document letting the named instances in without
// a token.
func accessFile(t testing.TB, anonymous ...string) string {
	t.Helper()
	_, data := fbtest.Access(t, anonymous...)
	path := filepath.Join(t.TempDir(), "access.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func start(t *testing.T, bin string, env ...string) *server {
	t.Helper()
	return startWith(t, bin, nil, env...)
}

// startWith is start with more flags.
func startWith(t *testing.T, bin string, flags []string, env ...string) *server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, append([]string{"-addr", addr, "-instances", instancesFile(t), "-access", accessFile(t, "demo")}, flags...)...)
	cmd.Env = append(os.Environ(), env...)
	logs := &output{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("server output:\n%s", logs.String())
		}
	})
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return &server{base: "http://" + addr + "/demo/RestServerIsapi.dll/api/v1/TServiceRestInterface/", cmd: cmd, out: logs}
		}
	}
	t.Fatal("the local server did not listen within 10 s")
	return nil
}

func (s *server) post(t *testing.T, endpoint, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(s.base+endpoint, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestLocalServerServesACatalogFile(t *testing.T) {
	s := start(t, build(t), "GATEWAY_CATALOG=../catalog.demo.json")

	began := time.Now()
	status, body := s.post(t, "executequery", `{"CLAVE":"Get_Inventario_Precio","FECHA_CORTE_":"22.11.2026","REFERENCIA_":""}`)
	took := time.Since(began)
	var a struct {
		CodError int               `json:"cod_error"`
		Data     []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &a); err != nil || status != 200 || a.CodError != 0 || len(a.Data) != 20000 {
		t.Fatalf("bulk read: HTTP %d, %d rows (%v): %.300s", status, len(a.Data), err, body)
	}
	t.Logf("20,000-row Get_Inventario_Precio on the local server: %s, %d bytes, peak RSS of the server %s",
		took.Round(time.Millisecond), len(body), fbtest.PeakRSS(t, s.cmd.Process.Pid))

	status, body = s.post(t, "execute", `{"CLAVE":"Set_Precio","REFERENCIA_":"INV19998","FECHA_":"01.01.2031","PRECIO_":"10.5"}`)
	if status != 200 || !strings.Contains(body, `"CODIGO":"INV19998"`) || !strings.Contains(body, `"PRECIO":10.5000,"FECHA_PRECIO":"2031-01-01"`) {
		t.Fatalf("Set_Precio: HTTP %d %s", status, body)
	}
	// The specification's operations answer as they did.
	status, body = s.post(t, "executequery", `{"CLAVE":"Get_Terceros","CODIGO":"NADIE"}`)
	if status != 200 || !strings.Contains(body, `***EL TERCERO NADIE NO EXISTE***`) {
		t.Fatalf("Get_Terceros: HTTP %d %s", status, body)
	}
}

// TestLocalServerSaysWhichCatalogItServes: its first line names the
// catalog file, or says it is the specification's, and counts the
// operations.
func TestLocalServerSaysWhichCatalogItServes(t *testing.T) {
	bin := build(t)
	tests := []struct {
		env, want string
	}{
		{"GATEWAY_CATALOG=../catalog.demo.json", "; the catalog ../catalog.demo.json, 9 operations)\n"},
		{"GATEWAY_CATALOG=", "; the specification's built-in catalog, 4 operations)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			s := start(t, bin, tt.env)
			first, _, _ := strings.Cut(s.out.String(), "\n")
			if !strings.HasPrefix(first, "serving the gateway on http://") || !strings.HasSuffix(first+"\n", tt.want) {
				t.Fatalf("start line %q does not end with %q", first, tt.want)
			}
		})
	}
}

func TestLocalServerRefusesAMalformedCatalog(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "catalog.json")
	if err := os.WriteFile(bad, []byte(`{"operations":[{"clave":"Set_X","endpoint":"execute","procedure":"REST_X","params":[{"name":"PRECIO_","kind":"decimal","precision":18}],"read_back":{"procedure":"REST_Y"}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, build(t), "-addr", "127.0.0.1:0", "-instances", instancesFile(t))
	cmd.Env = append(os.Environ(), "GATEWAY_CATALOG="+bad)
	out, err := cmd.CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("the server started with a malformed catalog: %v %s", err, out)
	}
	want := `operations[0] \"Set_X\": params[0] \"PRECIO_\": precision, scale`
	if !strings.Contains(string(out), want) {
		t.Fatalf("its output does not name the entry and the field (%s): %s", want, out)
	}
}

func TestLocalServerServesItsOpenAPIDocument(t *testing.T) {
	s := start(t, build(t), "GATEWAY_CATALOG=../catalog.demo.json")
	base := strings.TrimSuffix(s.base, "RestServerIsapi.dll/api/v1/TServiceRestInterface/")
	resp, err := http.Get(base + "openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		OpenAPI    string `json:"openapi"`
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &doc); err != nil || resp.StatusCode != 200 || doc.OpenAPI != "3.1.0" {
		t.Fatalf("HTTP %d, %v, %+v", resp.StatusCode, err, doc)
	}
	if _, ok := doc.Components.Schemas["Get_Inventario_Precio.answer"]; !ok {
		t.Fatalf("no schema for the catalog's Get_Inventario_Precio: %v", doc.Components.Schemas)
	}
	// The served copy has examples too: a request of every operation.
	var ops struct {
		Paths map[string]map[string]struct {
			RequestBody struct {
				Content map[string]struct {
					Examples map[string]struct{ Value map[string]string } `json:"examples"`
				} `json:"content"`
			} `json:"requestBody"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &ops); err != nil {
		t.Fatal(err)
	}
	ex := ops.Paths["/{instance}/RestServerIsapi.dll/api/v1/{class}/executequery"]["post"].RequestBody.Content["application/json"].Examples
	if got := ex["Get_Inventario_Precio"].Value; got["CLAVE"] != "Get_Inventario_Precio" || got["FECHA_CORTE_"] != "22.11.2026" {
		t.Fatalf("served request examples: %v", ex)
	}
}

// TestLocalServerLimits: bodies that never finish hold no slot of
// -max-requests (requests at work), so other requests are served while they
// wait; each is answered 408 in the gateway's JSON at the read timeout
// (TestLimitCountsWork refuses requests at work beyond the bound).
func TestLocalServerLimits(t *testing.T) {
	s := startWith(t, build(t), []string{"-read-timeout", "1s", "-max-requests", "2"})
	addr := strings.TrimPrefix(strings.SplitN(s.base, "/demo/", 2)[0], "http://")
	slow := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "POST /demo/RestServerIsapi.dll/api/v1/TServiceRestInterface/executequery HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"CLAVE\":")
		return c
	}
	var slows []net.Conn
	for range 4 {
		slows = append(slows, slow())
	}
	time.Sleep(200 * time.Millisecond) // all are being read

	for range 3 {
		if status, body := s.post(t, "executequery", `{"CLAVE":"Get_Terceros","CODIGO":"800000000"}`); status != 200 {
			t.Fatalf("beside the slow bodies: HTTP %d %s", status, body)
		}
	}
	for _, c := range slows {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout || string(b) != `{"cod_error":1012,"ex_execsql":"the body did not arrive in time"}` {
			t.Fatalf("unfinished body: HTTP %d %s", resp.StatusCode, b)
		}
	}
}

// TestLocalServerStreamsBigReads: the real binary sends a read of 100,000
// rows chunked, whole and exact, and gzip-encoded when asked.
func TestLocalServerStreamsBigReads(t *testing.T) {
	fbtest.CreateList(t, fbtest.Demo(t))
	s := start(t, build(t), "GATEWAY_CATALOG="+fbtest.ListCatalog(t))
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	var plain []byte
	for _, enc := range []string{"", "gzip"} {
		req, _ := http.NewRequest(http.MethodPost, s.base+"executequery", strings.NewReader(`{"CLAVE":"Get_Lista","N":"100000"}`))
		if enc != "" {
			req.Header.Set("Accept-Encoding", enc)
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		ttfb := time.Since(start)
		body, err := io.ReadAll(resp.Body)
		took := time.Since(start)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || resp.ContentLength != -1 || resp.Header.Get("Content-Encoding") != enc {
			t.Fatalf("%q: %d %v, Content-Length %d, Content-Encoding %q", enc, resp.StatusCode, err, resp.ContentLength, resp.Header.Get("Content-Encoding"))
		}
		if enc == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if body, err = io.ReadAll(zr); err != nil || !bytes.Equal(body, plain) {
				t.Fatalf("gzip decodes to %d bytes (%v), want the plain %d", len(body), err, len(plain))
			}
			continue
		}
		fbtest.CheckList(t, body, 100_000)
		plain = body
		// Measured against the whole read, so a slow machine (the race
		// detector) slows both.
		if ttfb > took/4 {
			t.Fatalf("first byte after %s of %s", ttfb, took)
		}
	}
}

// TestLocalServerDecodesBodiesAsAPIGateway: a body in gzip or deflate is
// read as API Gateway hands it to a function, decompressed, within the
// same bounds; another coding, or a body not encoded as it says, is
// refused with 415 in the gateway's shape.
func TestLocalServerDecodesBodiesAsAPIGateway(t *testing.T) {
	s := start(t, build(t))
	read := `{"CLAVE":"Get_Terceros","CODIGO":"NADIE"}`
	var gz, zl, bomb, empty bytes.Buffer
	for _, w := range []struct {
		w    io.WriteCloser
		body []byte
	}{{gzip.NewWriter(&gz), []byte(read)}, {zlib.NewWriter(&zl), []byte(read)}, {gzip.NewWriter(&bomb), make([]byte, 50<<20)}, {gzip.NewWriter(&empty), nil}} {
		w.w.Write(w.body) //nolint:errcheck // into memory
		w.w.Close()
	}
	_, plain := s.post(t, "executequery", read)
	for _, tt := range []struct {
		name, encoding string
		body           []byte
		status         int
		want           string
	}{
		{"gzip", "gzip", gz.Bytes(), 200, plain},
		{"deflate", "Deflate", zl.Bytes(), 200, plain},
		{"identity", "identity", []byte(read), 200, plain},
		{"brotli", "br", []byte(read), 415, `{"cod_error":1001,"ex_execsql":"Content-Encoding br is not one this service decodes: send gzip, deflate or identity"}`},
		{"gzip said, plain sent", "gzip", []byte(read), 415, `{"cod_error":1001,"ex_execsql":"the body is not encoded with its Content-Encoding"}`},
		{"gzip cut short", "gzip", gz.Bytes()[:gz.Len()-6], 415, `{"cod_error":1001,"ex_execsql":"the body is not encoded with its Content-Encoding"}`},
		{"50 MB of zeros in 50 KB", "gzip", bomb.Bytes(), 413, ""},
		{"2 MB of empty gzip members", "gzip", bytes.Repeat(empty.Bytes(), 2<<20/empty.Len()+1), 413, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, s.base+"executequery", bytes.NewReader(tt.body))
			req.Header.Set("Content-Encoding", tt.encoding)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || tt.want != "" && string(got) != tt.want || !json.Valid(got) || resp.Header.Get("Cache-Control") != "no-store" {
				t.Fatalf("%d %s, want %d %s", resp.StatusCode, got, tt.status, tt.want)
			}
		})
	}
}

// TestStrangersBodiesAreNotRead: a request without a token that opens its
// instance is refused at once, its body unread: a stranger's slow or large
// body costs the local server neither the wait nor the memory.
func TestStrangersBodiesAreNotRead(t *testing.T) {
	s := start(t, build(t))
	addr := strings.TrimPrefix(strings.SplitN(s.base, "/demo/", 2)[0], "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// 1 MB promised, 10 bytes sent: a body read first would wait out the
	// read timeout (30 s) before any answer.
	fmt.Fprintf(c, "POST /nadie/RestServerIsapi.dll/api/v1/TServiceRestInterface/executequery HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n{\"CLAVE\":")
	c.SetReadDeadline(time.Now().Add(5 * time.Second)) //nolint:errcheck // a failed read says it
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer while the body was still due: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), `"cod_error":1105`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}
