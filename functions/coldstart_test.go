package functions_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/erp-gateway/gateway/shared/fbtest"
)

// BenchmarkColdStart runs, round after round, the floor Lambda
// (testdata/floor: aws-lambda-go, the instance's secret read from the same
// Secrets Manager, and one prepared firebirdsql statement)
// and the real executequery bootstrap as deployed (streaming; its access
// document and instance in Secrets Manager, moto's behind our front) under
// the emulated Runtime API, on the same database and read, and reports
// ours against the floor: the first answer, from the process's start, and
// the warm median of warmCalls invocations after it; medians over the
// rounds (make coldstart: -benchtime 5x).
func BenchmarkColdStart(b *testing.B) {
	const warmCalls = 40
	floor, ours := buildBootstrap(b, "testdata/floor"), buildBootstrap(b, "executequery")
	_, doc, env := acmeInSecretsManager(b)
	env = append(env, "GATEWAY_RESPONSE_STREAMING=true")
	token := fbtest.Token(b, doc, "acme")
	event := restEvent(b, strings.Replace(apiPath, "demo", "acme", 1)+"executequery", `{"CLAVE":"Get_Terceros","CODIGO":"800000000"}`,
		func(e *events.APIGatewayProxyRequest) {
			e.MultiValueHeaders["Authorization"] = []string{"Bearer " + token}
		})
	// The floor reads the same instance's secret from the same endpoint.
	floorEnv := append([]string{"FLOOR_SECRET=" + secretsPrefix + "acme", "FLOOR_CODIGO=800000000"}, env...)

	// run starts binary, and answers the first event and then warmCalls.
	run := func(binary string, env []string) (first, warm time.Duration) {
		api, srv := newRuntimeAPI(b)
		start, cmd := startBootstrapCmd(b, binary, strings.TrimPrefix(srv.URL, "http://"), env...)
		defer func() {
			cmd.Process.Kill() //nolint:errcheck // it may have ended
			cmd.Wait()         //nolint:errcheck // killed
			if binary == ours && testing.Verbose() {
				for _, line := range strings.Split(cmd.Stdout.(*lockedBuffer).String(), "\n") {
					if strings.Contains(line, `"msg":"started"`) || strings.Contains(line, `"msg":"request"`) {
						b.Log(line[:min(len(line), 300)])
					}
				}
			}
		}()
		resp, res := api.invoke(event)
		first = time.Since(start)
		if res.isError || resp.StatusCode != 200 || !strings.Contains(resp.Body, `"data"`) {
			b.Fatalf("%s: %d %s %s", binary, resp.StatusCode, resp.Body, res.body)
		}
		took := make([]time.Duration, warmCalls)
		for i := range took {
			began := time.Now()
			api.invoke(event)
			took[i] = time.Since(began)
		}
		slices.Sort(took)
		return first, took[warmCalls/2]
	}
	var firsts, warms []float64
	var floorFirst, oursFirst []time.Duration
	for b.Loop() {
		ff, fw := run(floor, floorEnv)
		of, ow := run(ours, env)
		floorFirst, oursFirst = append(floorFirst, ff), append(oursFirst, of)
		firsts, warms = append(firsts, float64(of)/float64(ff)), append(warms, float64(ow)/float64(fw))
	}
	median := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	medianD := func(v []time.Duration) time.Duration { slices.Sort(v); return v[len(v)/2] }
	b.ReportMetric(median(firsts), "first-answer/floor")
	b.ReportMetric(median(warms), "warm-p50/floor")
	b.ReportMetric(float64(medianD(oursFirst).Microseconds())/1000, "first-answer-ms")
	b.ReportMetric(float64(medianD(floorFirst).Microseconds())/1000, "floor-first-answer-ms")
}

// TestFloorBuilds: the floor make coldstart measures against builds, though
// no test runs it.
func TestFloorBuilds(t *testing.T) { buildBootstrap(t, "testdata/floor") }
