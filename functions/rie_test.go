package functions_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// rie is AWS's Lambda Runtime Interface Emulator, the one its base images
// carry: an emulator of AWS's own beside ours (runtime_test.go), so the
// binaries are held to more than our reading of the Runtime API. Its
// module's newest version on the proxy, pinned.
const rie = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@v0.0.0-20261030222936-bef5c4ba774d"

// installRIE builds the emulator through the module proxy (the build cache
// makes it quick after the first time) and returns its binary.
func installRIE(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "install", rie)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install %s: %v\n%s", rie, err, b)
	}
	return filepath.Join(dir, "aws-lambda-rie")
}

// freeAddrs are n loopback addresses the kernel had free, each its own
// (all are held until all are known); another process may take one
// first, and then the emulator fails loudly.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var addrs []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		addrs = append(addrs, l.Addr().String())
	}
	return addrs
}

// underRIE runs binary under the emulator with env and returns a function
// that invokes it with an API Gateway event of path, body and request id, as
// the Lambda service does, and what the emulator and the function print.
func underRIE(t *testing.T, emulator, binary string, env []string) (invoke func(path, body, id string) events.APIGatewayProxyResponse, logs *lockedBuffer) {
	t.Helper()
	// Its invocations' address and its Runtime API's (9001 unless told),
	// each a free port.
	free := freeAddrs(t, 2)
	addr, runtimeAPI := free[0], free[1]
	cmd := exec.Command(emulator, "--runtime-interface-emulator-address", addr, "--runtime-api-address", runtimeAPI, binary)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "AWS_REGION=us-east-1", "AWS_LAMBDA_FUNCTION_TIMEOUT=30"}, env...)
	logs = &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill() //nolint:errcheck // it may have exited
		cmd.Wait()         //nolint:errcheck // killed
		if t.Failed() {
			t.Logf("emulator output:\n%s", logs.String())
		}
	})
	invoke = func(path, body, id string) events.APIGatewayProxyResponse {
		t.Helper()
		ev, err := json.Marshal(restEvent(t, path, body, func(e *events.APIGatewayProxyRequest) { e.RequestContext.RequestID = id }))
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + addr + "/2015-03-31/functions/function/invocations"
		var resp *http.Response
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if resp, err = http.Post(url, "application/json", bytes.NewReader(ev)); err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out events.APIGatewayProxyResponse
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("invocation: HTTP %d, %v", resp.StatusCode, err)
		}
		return out
	}
	return invoke, logs
}

// TestBootstrapsUnderAWSsRuntimeEmulator runs both functions' binaries
// under AWS's emulator. A read answers with its record, a new execution
// environment's reads take the round trips the guide gives (at most 9, then
// 1: infra/docs/internals.md), and a malformed body is refused with its
// code; a write answers with its read-back, and the same write again with
// the procedure's refusal.
func TestBootstrapsUnderAWSsRuntimeEmulator(t *testing.T) {
	emulator := installRIE(t)
	instances := environ(inline(t, nil))

	t.Run("executequery", func(t *testing.T) {
		invoke, logs := underRIE(t, emulator, buildBootstrap(t, "executequery"), instances)
		var trips []any
		for i := range 3 {
			id := fmt.Sprintf("rie-read-%d-%d", i, time.Now().UnixNano())
			resp := invoke(apiPath+"executequery", `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`, id)
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Body, `{"cod_error":0,"data":[{"CODIGO":"REF0001",`) {
				t.Fatalf("read %d: %d %.300s", i, resp.StatusCode, resp.Body)
			}
			// The emulator passes the function's output on by itself: the
			// line may come after the answer.
			trips = append(trips, requestLine(t, logs, id)["round_trips"])
		}
		if resp := invoke(apiPath+"executequery", `{"CLAVE":"Get_Terceros","CODIGO":12}`, "rie-malformed"); resp.StatusCode != 400 || !strings.Contains(resp.Body, `"cod_error":1007`) {
			t.Fatalf("malformed: %d %s", resp.StatusCode, resp.Body)
		}
		t.Logf("round trips of the reads: %v", trips)
		if first, ok := trips[0].(float64); !ok || first > 9 || trips[1] != 1.0 || trips[2] != 1.0 {
			t.Errorf("the reads' round trips: %v, want at most 9, then 1 and 1", trips)
		}
	})

	t.Run("execute", func(t *testing.T) {
		invoke, _ := underRIE(t, emulator, buildBootstrap(t, "execute"), instances)
		code := fmt.Sprintf("E%d", time.Now().UnixNano()%1e14)
		body := `{"CLAVE":"Set_Terceros","CODIGO":"` + code + `","DV":"1","NATURALEZA":"N","NOM1":"Ana","APL1":"Peña","RAZON_COMERCIAL":"Ana Peña","DIRECCION":"Calle 2","CODIDENTIDAD":"CC","CODSOCIEDAD":"PN","CODPAIS":"CO","CODMUNICIPIO":"11001"}`
		if resp := invoke(apiPath+"execute", body, "rie-insert-"+code); resp.StatusCode != 200 || !strings.Contains(resp.Body, `"CODIGO":"`+code+`"`) || !strings.Contains(resp.Body, `"NOMBRE":"Ana Peña"`) {
			t.Fatalf("insert: %d %.300s", resp.StatusCode, resp.Body)
		}
		if resp := invoke(apiPath+"execute", body, "rie-again-"+code); resp.StatusCode != 200 || !strings.Contains(resp.Body, `YA EXISTE`) {
			t.Fatalf("the same again: %d %.300s", resp.StatusCode, resp.Body)
		}
	})
}
