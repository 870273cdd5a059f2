package functions_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/erp-gateway/gateway/shared/fbtest"
)

// peakKB is a process's peak resident memory (VmHWM), in kB.
func peakKB(t *testing.T, pid int) int {
	t.Helper()
	v, err := strconv.Atoi(strings.TrimSuffix(fbtest.PeakRSS(t, pid), " kB"))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestExecuteQueryBootstrapStreams runs the real executequery binary, its
// integration streaming, under the emulated Runtime API: a read of 100,000
// rows is posted as API Gateway's streaming format, whole and exact, its
// first byte early and its peak memory that of a 1,000-row read; gzip when
// asked; an answer within the threshold is what the buffering function
// answers; a failure after the first byte ends the stream with the
// runtime's error trailers and a body that is not JSON.
func TestExecuteQueryBootstrapStreams(t *testing.T) {
	fbtest.CreateList(t, fbtest.Demo(t))
	base := environ(inline(t, nil))
	base = append(base, "GATEWAY_CATALOG="+fbtest.ListCatalog(t))
	streaming := append(append([]string{}, base...), "GATEWAY_RESPONSE_STREAMING=true")
	bin := buildBootstrap(t, "executequery")

	// run starts a bootstrap, sends it one read and returns the answer and
	// the bootstrap's peak memory.
	run := func(env []string, body string, edit func(*events.APIGatewayProxyRequest), pause time.Duration) (events.APIGatewayProxyResponse, result, time.Duration, int) {
		api, srv := newRuntimeAPI(t)
		api.pause.Store(int64(pause))
		_, cmd := startBootstrapCmd(t, bin, strings.TrimPrefix(srv.URL, "http://"), env...)
		sent := time.Now()
		resp, res := api.invoke(restEvent(t, apiPath+"executequery", body, edit))
		if res.isError {
			t.Fatalf("function error: %s", res.body)
		}
		return resp, res, res.firstByte.Sub(sent), peakKB(t, cmd.Process.Pid)
	}
	list := func(clave string, n int) string { return fmt.Sprintf(`{"CLAVE":%q,"N":"%d"}`, clave, n) }
	gz := func(e *events.APIGatewayProxyRequest) {
		e.Headers["Accept-Encoding"] = "gzip, deflate"
		e.MultiValueHeaders["Accept-Encoding"] = []string{"gzip, deflate"}
	}

	small, smallRes, _, smallKB := run(streaming, list("Get_Lista", 1000), nil, 0)
	buffered, _, _, _ := run(base, list("Get_Lista", 1000), nil, 0)
	delete(small.MultiValueHeaders, "X-Request-Id")
	delete(buffered.MultiValueHeaders, "X-Request-Id")
	if !smallRes.streamed || small.StatusCode != 200 || small.Body != buffered.Body || fmt.Sprint(small.MultiValueHeaders) != fmt.Sprint(buffered.MultiValueHeaders) {
		t.Fatalf("1,000 rows: streamed %v, %d, headers %v, %d bytes; buffered: %d, headers %v, %d bytes",
			smallRes.streamed, small.StatusCode, small.MultiValueHeaders, len(small.Body), buffered.StatusCode, buffered.MultiValueHeaders, len(buffered.Body))
	}
	fbtest.CheckList(t, []byte(small.Body), 1000)

	const n = 100_000
	began := time.Now()
	big, bigRes, ttfb, bigKB := run(streaming, list("Get_Lista", n), nil, 0)
	took := time.Since(began)
	if big.StatusCode != 200 || bigRes.errorType != "" || big.MultiValueHeaders["Content-Length"] != nil {
		t.Fatalf("100,000 rows: %d, trailer %q, headers %v", big.StatusCode, bigRes.errorType, big.MultiValueHeaders)
	}
	fbtest.CheckList(t, []byte(big.Body), n)
	// Measured against the whole run, the bootstrap's start in both, so
	// a slow machine (the race detector) slows both.
	if ttfb > took/3 {
		t.Fatalf("first byte after %s of %s", ttfb, took)
	}
	if float64(bigKB) > 1.5*float64(smallKB) {
		t.Fatalf("peak memory %d kB for 100,000 rows, %d kB for 1,000", bigKB, smallKB)
	}
	t.Logf("100,000 rows: %d bytes, first byte after %s; peak memory %d kB (1,000 rows: %d kB, %.2fx)",
		len(big.Body), ttfb.Round(time.Millisecond), bigKB, smallKB, float64(bigKB)/float64(smallKB))

	zipped, _, _, _ := run(streaming, list("Get_Lista", n), gz, 0)
	if got := zipped.MultiValueHeaders["Content-Encoding"]; len(got) != 1 || got[0] != "gzip" {
		t.Fatalf("Accept-Encoding gzip: headers %v", zipped.MultiValueHeaders)
	}
	zr, err := gzip.NewReader(strings.NewReader(zipped.Body))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(plain, []byte(big.Body)) {
		t.Fatalf("gzip decodes to %d bytes (%v), want %d", len(plain), err, len(big.Body))
	}
	t.Logf("gzip: %d bytes", len(zipped.Body))

	for _, tt := range []struct {
		name  string
		env   []string
		body  string
		pause time.Duration
	}{
		{"max_rows past the first byte", streaming, list("Get_Lista_50000", n), 0},
		{"the stream's deadline, API Gateway not reading", append(append([]string{}, streaming...), "GATEWAY_STREAM_TIMEOUT=1s"), list("Get_Lista", 300_000), 2500 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, res, _, _ := run(tt.env, tt.body, nil, tt.pause)
			if resp.StatusCode != 200 || res.errorType == "" || json.Valid(res.body) {
				t.Fatalf("%d, trailer %q, %d bytes, valid JSON %v", resp.StatusCode, res.errorType, len(res.body), json.Valid(res.body))
			}
			t.Logf("cut after %d bytes, trailer %s", len(res.body), res.errorType)
		})
	}
}
