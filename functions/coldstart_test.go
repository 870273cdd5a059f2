package functions_test

import (
	"cmp"
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
// ours against the floor (and against the floor on one P, as ours runs):
// the first answer, from the process's start, and the warm median of
// warmCalls invocations after it, the processes' invocations taking turns;
// medians over the rounds (make coldstart: -benchtime 5x).
func BenchmarkColdStart(b *testing.B) {
	const warmCalls = 400
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

	// started is a function process that answered its first event.
	type started struct {
		api   *runtimeAPI
		first time.Duration
		stop  func()
	}
	// start starts binary and answers its first event.
	start := func(binary string, env []string) started {
		api, srv := newRuntimeAPI(b)
		began, cmd := startBootstrapCmd(b, binary, strings.TrimPrefix(srv.URL, "http://"), env...)
		resp, res := api.invoke(event)
		first := time.Since(began)
		if res.isError || resp.StatusCode != 200 || !strings.Contains(resp.Body, `"data"`) {
			b.Fatalf("%s: %d %s %s", binary, resp.StatusCode, resp.Body, res.body)
		}
		return started{api: api, first: first, stop: func() {
			cmd.Process.Kill() //nolint:errcheck // it may have ended
			cmd.Wait()         //nolint:errcheck // killed
			if binary == ours && testing.Verbose() {
				for _, line := range strings.Split(cmd.Stdout.(*lockedBuffer).String(), "\n") {
					if strings.Contains(line, `"msg":"started"`) || strings.Contains(line, `"msg":"request"`) {
						b.Log(line[:min(len(line), 300)])
					}
				}
			}
		}}
	}
	// warm times one invocation.
	warm := func(p started) time.Duration {
		began := time.Now()
		p.api.invoke(event)
		return time.Since(began)
	}
	var firsts, warms, warmsAlike []float64
	var floorFirst, oursFirst, floorWarm, oursWarm []time.Duration
	// The floor alike runs on one P, as ours does (lambdafn.Main): ours
	// against it is our code's cost, against the floor the setting's gain too.
	alikeEnv := append(append([]string{}, floorEnv...), "GOMAXPROCS=1")
	for b.Loop() {
		// The first answers one after the other, each process alone;
		// then all three warm, their invocations taking turns, so that
		// the machine's drift weighs on each alike.
		f := start(floor, floorEnv)
		a := start(floor, alikeEnv)
		o := start(ours, env)
		fw, aw, ow := make([]time.Duration, warmCalls), make([]time.Duration, warmCalls), make([]time.Duration, warmCalls)
		for i := range warmCalls {
			fw[i], aw[i], ow[i] = warm(f), warm(a), warm(o)
		}
		for _, p := range []started{f, a, o} {
			p.stop()
		}
		floorFirst, oursFirst = append(floorFirst, f.first), append(oursFirst, o.first)
		floorWarm, oursWarm = append(floorWarm, median(fw)), append(oursWarm, median(ow))
		firsts = append(firsts, float64(o.first)/float64(f.first))
		warms, warmsAlike = append(warms, float64(median(ow))/float64(median(fw))), append(warmsAlike, float64(median(ow))/float64(median(aw)))
	}
	b.ReportMetric(median(firsts), "first-answer/floor")
	b.ReportMetric(median(warms), "warm-p50/floor")
	b.ReportMetric(median(warmsAlike), "warm-p50/floor-one-P")
	b.ReportMetric(float64(median(oursFirst).Microseconds())/1000, "first-answer-ms")
	b.ReportMetric(float64(median(floorFirst).Microseconds())/1000, "floor-first-answer-ms")
	b.ReportMetric(float64(median(oursWarm).Microseconds())/1000, "warm-p50-ms")
	b.ReportMetric(float64(median(floorWarm).Microseconds())/1000, "floor-warm-p50-ms")
}

// median sorts v and returns its middle element.
func median[T cmp.Ordered](v []T) T {
	slices.Sort(v)
	return v[len(v)/2]
}

// TestFloorBuilds: the floor make coldstart measures against builds, though
// no test runs it.
func TestFloorBuilds(t *testing.T) { buildBootstrap(t, "testdata/floor") }
