package functions_test

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// runtimeAPI emulates the Lambda Runtime API (2018-06-01) for one function
// process: it hands out queued events and collects the answers.
type runtimeAPI struct {
	t       testing.TB
	events  chan invocation
	mu      sync.Mutex
	results map[string]chan result
	seq     atomic.Int64 // request ids, unique among concurrent invocations
	pause   atomic.Int64 // a time.Duration: see readStream
	// limit is the functions' timeout, a time.Duration (25 s when zero).
	limit atomic.Int64
}

type invocation struct {
	id    string
	event []byte
}

type result struct {
	body    []byte
	isError bool
	at      time.Time
	// A streamed response (aws-lambda-go's API Gateway streaming format):
	// its prelude, when its first body byte came, and the error type of
	// the trailers the runtime sends when the body fails.
	streamed  bool
	prelude   []byte
	firstByte time.Time
	errorType string
}

// streamingType is the Content-Type of a response in API Gateway's
// streaming format: a JSON prelude, eight NUL bytes, the body.
const streamingType = "application/vnd.awslambda.http-integration-response"

func newRuntimeAPI(t testing.TB) (*runtimeAPI, *httptest.Server) {
	r := &runtimeAPI{t: t, events: make(chan invocation, 16), results: make(map[string]chan result)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", func(w http.ResponseWriter, req *http.Request) {
		select {
		case inv := <-r.events:
			h := w.Header()
			h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
			h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(cmp.Or(time.Duration(r.limit.Load()), 25*time.Second)).UnixMilli(), 10))
			h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:erp-gateway-ExecuteQueryFunction")
			h.Set("Lambda-Runtime-Trace-Id", "Root=1-6740a1b2-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=1")
			h.Set("Content-Type", "application/json")
			w.Write(inv.event)
		case <-req.Context().Done():
		}
	})
	answer := func(isError bool) http.HandlerFunc {
		return func(w http.ResponseWriter, req *http.Request) {
			res := result{isError: isError}
			if req.Header.Get("Content-Type") == streamingType {
				res = r.readStream(req)
			} else {
				res.body, _ = io.ReadAll(req.Body)
			}
			res.at = time.Now()
			r.result(req.PathValue("id")) <- res
			w.WriteHeader(http.StatusAccepted)
		}
	}
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", answer(false))
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", answer(true))
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", func(w http.ResponseWriter, req *http.Request) {
		t.Errorf("the function failed to initialise")
		w.WriteHeader(http.StatusAccepted)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return r, srv
}

// readStream reads a streamed response as API Gateway does: the prelude up
// to eight NUL bytes (within the first 16 KB), then the body as it comes,
// then the trailers. With pause set, it stops reading after the prelude for
// that long, as API Gateway does for a slow client.
func (r *runtimeAPI) readStream(req *http.Request) result {
	res := result{streamed: true}
	br := bufio.NewReader(req.Body)
	delim := make([]byte, 8)
	for len(res.prelude) <= 16<<10 && !bytes.HasSuffix(res.prelude, delim) {
		c, err := br.ReadByte()
		if err != nil {
			r.t.Errorf("a streamed response without its prelude: %q", res.prelude)
			return res
		}
		res.prelude = append(res.prelude, c)
	}
	res.prelude = res.prelude[:len(res.prelude)-8]
	if d := time.Duration(r.pause.Load()); d > 0 {
		time.Sleep(d)
	}
	if _, err := br.Peek(1); err == nil {
		res.firstByte = time.Now()
	}
	res.body, _ = io.ReadAll(br)
	res.errorType = req.Trailer.Get("Lambda-Runtime-Function-Error-Type")
	return res
}

// payload is the response as the function wrote it, which Lambda's Invoke
// returns: for a streamed one, its prelude, the delimiter and its body.
func (res result) payload() []byte {
	if !res.streamed {
		return res.body
	}
	return append(append(append([]byte{}, res.prelude...), make([]byte, 8)...), res.body...)
}

func (r *runtimeAPI) result(id string) chan result {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch, ok := r.results[id]
	if !ok {
		ch = make(chan result, 1)
		r.results[id] = ch
	}
	return ch
}

// invoke queues an API Gateway event and waits for the function's answer.
func (r *runtimeAPI) invoke(ev events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, result) {
	r.t.Helper()
	raw, _ := json.Marshal(ev)
	res := r.invokeRaw(raw)
	var resp events.APIGatewayProxyResponse
	switch {
	case res.isError:
	case res.streamed:
		if err := json.Unmarshal(res.prelude, &resp); err != nil {
			r.t.Fatalf("a prelude that is not JSON: %s", res.prelude)
		}
		resp.Body = string(res.body)
	default:
		if err := json.Unmarshal(res.body, &resp); err != nil {
			r.t.Fatalf("answer is not a proxy response: %s", res.body)
		}
	}
	return resp, res
}

// invokeWithin is invoke for an answer that may never come (its
// environment killed): false when none came within d.
func (r *runtimeAPI) invokeWithin(ev events.APIGatewayProxyRequest, d time.Duration) (events.APIGatewayProxyResponse, bool) {
	raw, _ := json.Marshal(ev)
	id := fmt.Sprintf("req-%d", r.seq.Add(1))
	r.events <- invocation{id: id, event: raw}
	var resp events.APIGatewayProxyResponse
	select {
	case res := <-r.result(id):
		return resp, !res.isError && json.Unmarshal(res.body, &resp) == nil
	case <-time.After(d):
		return resp, false
	}
}

// invokeRaw queues any event and waits for the function's answer.
func (r *runtimeAPI) invokeRaw(event []byte) result {
	id := fmt.Sprintf("req-%d", r.seq.Add(1))
	r.events <- invocation{id: id, event: event}
	select {
	case res := <-r.result(id):
		return res
	case <-time.After(30 * time.Second):
		r.t.Error("no answer from the function within 30s")
		return result{body: []byte(`{"errorMessage":"no answer within 30s"}`), isError: true}
	}
}

// buildBootstrap builds a function's real binary for this machine, with the
// flags of `make build` but the host's GOOS/GOARCH.
func buildBootstrap(t testing.TB, dir string) string {
	t.Helper()
	return buildBootstrapWith(t, dir, "")
}

// buildBootstrapWith builds with catalogFile built in, as `make build
// CATALOG=file` does.
func buildBootstrapWith(t testing.TB, dir, catalogFile string) string {
	t.Helper()
	ldflags := "-s -w"
	if catalogFile != "" {
		ldflags += " -X main.catalogB64=" + builtCatalog(t, catalogFile)
	}
	out := filepath.Join(t.TempDir(), "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags="+ldflags, "-o", out, "./"+dir)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", dir, err, b)
	}
	return out
}

func startBootstrap(t testing.TB, binary, runtimeAddr string, env ...string) time.Time {
	t.Helper()
	start, _ := startBootstrapCmd(t, binary, runtimeAddr, env...)
	return start
}

// startBootstrapCmd is startBootstrap, also returning the running process and
// what it writes.
func startBootstrapCmd(t testing.TB, binary, runtimeAddr string, env ...string) (time.Time, *exec.Cmd) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, binary)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"AWS_LAMBDA_RUNTIME_API=" + runtimeAddr,
		"AWS_LAMBDA_FUNCTION_NAME=erp-gateway-test",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256",
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_LOG_FORMAT=JSON",
		"AWS_LAMBDA_LOG_LEVEL=INFO",
		"AWS_REGION=us-east-1",
	}, env...)
	logs := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		if t.Failed() {
			t.Logf("function output:\n%s", logs.String())
		}
	})
	return start, cmd
}

func TestBootstrapBinariesAgainstTheRuntimeAPI(t *testing.T) {
	instances := environ(inline(t, nil))

	t.Run("executequery", func(t *testing.T) {
		api, srv := newRuntimeAPI(t)
		start, cmd := startBootstrapCmd(t, buildBootstrap(t, "executequery"), strings.TrimPrefix(srv.URL, "http://"), instances...)

		resp, res := api.invoke(restEvent(t, apiPath+"executequery", `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`, nil))
		// One P, unless the environment says otherwise (lambdafn.Main).
		if out := cmd.Stdout.(*lockedBuffer).String(); !strings.Contains(out, `"gomaxprocs":1,`) {
			t.Errorf("the function does not run on one P: %s", out)
		}
		t.Logf("start of the binary to its first response (cold start, first connection included): %s", res.at.Sub(start).Round(time.Millisecond))
		if res.isError || resp.StatusCode != 200 || !strings.HasPrefix(resp.Body, `{"cod_error":0,"data":[{"CODIGO":"REF0001",`) {
			t.Fatalf("read: %+v %s", resp, res.body)
		}
		warm := time.Now()
		resp, _ = api.invoke(restEvent(t, apiPath+"executequery", `{"CLAVE":"Get_Referencias","CODIGO":"REF0002"}`, nil))
		t.Logf("warm invocation round trip: %s", time.Since(warm).Round(time.Microsecond))
		if resp.StatusCode != 200 || !strings.Contains(resp.Body, `"CODIGO":"REF0002"`) {
			t.Fatalf("second read: %+v", resp)
		}
		resp, _ = api.invoke(restEvent(t, apiPath+"executequery", `{"CLAVE":"Get_Terceros","CODIGO":"10104729"}`, nil))
		if resp.StatusCode != 200 || !strings.Contains(resp.Body, `"NOMBRE":"María José Gómez Ávila"`) {
			t.Fatalf("third party: %+v", resp)
		}
		resp, _ = api.invoke(restEvent(t, apiPath+"executequery", `{"CLAVE":"Get_Gestion_Primario","TIPO":"FV","PREFIJO":"FE","NUMERO":"1000"}`, nil))
		if resp.StatusCode != 200 || !strings.Contains(resp.Body, `"TOTAL":3131787.13`) {
			t.Fatalf("document: %+v", resp)
		}
		resp, _ = api.invoke(restEvent(t, apiPath+"executequery", `{"CLAVE":"Get_Terceros","CODIGO":"NADIE"}`, nil))
		if resp.StatusCode != 200 || !strings.Contains(resp.Body, `***EL TERCERO NADIE NO EXISTE***`) {
			t.Fatalf("not found: %+v", resp)
		}
		resp, _ = api.invoke(restEvent(t, apiPath+"executequery", `{"CLAVE":"Get_Terceros","CODIGO":12}`, nil))
		if resp.StatusCode != 400 || !strings.Contains(resp.Body, `"cod_error":1007`) {
			t.Fatalf("malformed: %+v", resp)
		}
		// A stranger's 60,000-character path with a bad escape: refused,
		// and no line of the function's output quotes it whole (the
		// request adapter would print it, twice).
		long := "/de%zz" + strings.Repeat("x", 60000) + "/RestServerIsapi.dll/api/v1/TServiceRestInterface/executequery"
		resp, _ = api.invoke(restEvent(t, long, `{}`, nil))
		if resp.StatusCode != 400 || !strings.Contains(resp.Body, `"cod_error":1001`) {
			t.Fatalf("a long path with a bad escape: %+v", resp)
		}
		for _, line := range strings.Split(cmd.Stdout.(*lockedBuffer).String(), "\n") {
			if len(line) > 2048 {
				t.Fatalf("a log line of %d bytes: %.300s", len(line), line)
			}
		}
	})

	t.Run("execute", func(t *testing.T) {
		api, srv := newRuntimeAPI(t)
		startBootstrap(t, buildBootstrap(t, "execute"), strings.TrimPrefix(srv.URL, "http://"), instances...)
		code := fmt.Sprintf("B%d", time.Now().UnixNano()%1e14)
		body := `{"CLAVE":"Set_Terceros","CODIGO":"` + code + `","DV":"1","NATURALEZA":"N","NOM1":"Ana","APL1":"Peña","RAZON_COMERCIAL":"Ana Peña","DIRECCION":"Calle 2","CODIDENTIDAD":"CC","CODSOCIEDAD":"PN","CODPAIS":"CO","CODMUNICIPIO":"11001"}`
		resp, _ := api.invoke(restEvent(t, apiPath+"execute", body, nil))
		if resp.StatusCode != 200 || !strings.Contains(resp.Body, `"NOMBRE":"Ana Peña"`) {
			t.Fatalf("insert: %+v", resp)
		}
		resp, _ = api.invoke(restEvent(t, apiPath+"execute", body, nil))
		if resp.StatusCode != 200 || !strings.Contains(resp.Body, `YA EXISTE`) {
			t.Fatalf("duplicate: %+v", resp)
		}
		resp, _ = api.invoke(restEvent(t, apiPath+"executequery", `{"CLAVE":"Get_Terceros","CODIGO":"`+code+`"}`, nil))
		if resp.StatusCode != 404 {
			t.Fatalf("the write function answered a read path: %+v", resp)
		}
	})
}

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
