package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/erp-gateway/gateway/shared/access"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// neighbourTimeout is the database deadline of the neighbour phase.
const neighbourTimeout = 5 * time.Second

// neighbour measures what a customer whose Firebird hangs costs another: a
// local server with instance b (the demo database) and instance a (a TCP
// endpoint that accepts and never answers). First clients call b alone for
// d; then as many call a while they call b for d. It prints b's p99 in both
// and how fast a's refusals come once its breaker is open.
func neighbour(ctx context.Context, o options, d time.Duration, clients int) error {
	instances, err := tenants.LoadFile(o.instances)
	if err != nil {
		return err
	}
	healthy, err := instances.Lookup(ctx, o.instance)
	if err != nil {
		return fmt.Errorf("instance %s: %w", o.instance, err)
	}
	hang, err := fbtest.Hang()
	if err != nil {
		return err
	}
	defer hang.Close()
	hanging := healthy
	hanging.Connection.Host, hanging.Connection.Port = "127.0.0.1", hang.Addr().(*net.TCPAddr).Port

	dir, err := os.MkdirTemp("", "neighbour")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	signer, err := access.NewSigner("load")
	if err != nil {
		return err
	}
	accessDoc := []byte(`{"keys":{"load":"` + signer.PublicKey() + `"}}`)
	instancesDoc, err := json.Marshal(map[string]tenants.Instance{"a": hanging, "b": healthy})
	if err != nil {
		return err
	}
	so := o
	so.instances, so.access = filepath.Join(dir, "instances.json"), filepath.Join(dir, "access.json")
	if err := os.WriteFile(so.instances, instancesDoc, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(so.access, accessDoc, 0o600); err != nil {
		return err
	}
	os.Setenv("GATEWAY_DB_TIMEOUT", neighbourTimeout.String())
	srv, err := startServer(so)
	if err != nil {
		return err
	}
	defer srv.stop()

	tokenA, _, _ := signer.Mint("a", erp.Limits{})
	tokenB, _, _ := signer.Mint("b", erp.Limits{})
	fmt.Printf("\nNoisy neighbour: instance a accepts connections and never answers (database deadline %s), instance b is the demo database; %d clients each, %s per phase.\n", neighbourTimeout, clients, d)

	alone, err := neighbourPhase(ctx, baseURL(srv.addr, "b"), tokenB, "", "", clients, d, false)
	if err != nil {
		return err
	}
	// a's clients first as well-behaved ones, waiting as Retry-After says;
	// then as a client that retries at once, whatever it is told.
	mixed, err := neighbourPhase(ctx, baseURL(srv.addr, "b"), tokenB, baseURL(srv.addr, "a"), tokenA, clients, d, true)
	if err != nil {
		return err
	}
	stubborn, err := neighbourPhase(ctx, baseURL(srv.addr, "b"), tokenB, baseURL(srv.addr, "a"), tokenA, clients, d, false)
	if err != nil {
		return err
	}
	p99 := func(l []time.Duration) time.Duration { return percentile(l, 99) }
	fmt.Printf("b alone:              %6d calls, p99 %s\n", len(alone.b), p99(alone.b).Round(time.Microsecond))
	for _, m := range []struct {
		what string
		t    *neighbourTally
	}{{"a's clients honour Retry-After", mixed}, {"a's clients retry at once", stubborn}} {
		fmt.Printf("%s:\n", m.what)
		fmt.Printf("  b beside a:         %6d calls, p99 %s  (%.2f× alone; target ≤ 2×)\n", len(m.t.b), p99(m.t.b).Round(time.Microsecond),
			float64(p99(m.t.b))/float64(max(p99(alone.b), 1)))
		fmt.Printf("  a, deadline hit:    %6d calls (503, cod_error %d)\n", len(m.t.aTimeouts), erp.CodeUnavailable)
		fmt.Printf("  a, paused:          %6d calls (503, cod_error %d), p99 %s, max %s  (target < 50ms)\n", len(m.t.aPaused), erp.CodePaused,
			p99(m.t.aPaused).Round(time.Microsecond), slices.Max(append(m.t.aPaused, 0)).Round(time.Microsecond))
	}
	for _, t := range []*neighbourTally{alone, mixed, stubborn} {
		if t.other > 0 {
			return fmt.Errorf("%d unexpected answers in the neighbour phase (first: %w)", t.other, t.firstErr)
		}
	}
	return nil
}

type neighbourTally struct {
	mu                    sync.Mutex
	b, aTimeouts, aPaused []time.Duration
	other                 int
	firstErr              error
}

// neighbourPhase runs clients against b, and as many against a when baseA is
// set, for d; the latencies come back sorted. With polite, a's clients wait
// as an answer's Retry-After says before they call again.
func neighbourPhase(ctx context.Context, baseB, tokenB, baseA, tokenA string, clients int, d time.Duration, polite bool) (*neighbourTally, error) {
	t := &neighbourTally{}
	stopAt := time.Now().Add(d)
	loop := func(base, token string, wait bool, record func(status int, answer []byte, took time.Duration)) error {
		wc, err := newWireClient(base+"executequery", token, []byte(readBody))
		if err != nil {
			return err
		}
		defer wc.close()
		for time.Now().Before(stopAt) && ctx.Err() == nil {
			began := time.Now()
			status, answer, err := wc.post()
			if err != nil {
				t.mu.Lock()
				t.other++
				t.firstErr = cmp.Or(t.firstErr, err)
				t.mu.Unlock()
				continue
			}
			record(status, answer, time.Since(began))
			if wait && wc.retryAfter > 0 {
				pause := min(time.Duration(wc.retryAfter)*time.Second, time.Until(stopAt))
				select {
				case <-time.After(pause):
				case <-ctx.Done():
				}
			}
		}
		return nil
	}
	onB := func(status int, answer []byte, took time.Duration) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if err := wantData(status, answer); err != nil {
			t.other++
			t.firstErr = cmp.Or(t.firstErr, err)
			return
		}
		t.b = append(t.b, took)
	}
	onA := func(status int, answer []byte, took time.Duration) {
		t.mu.Lock()
		defer t.mu.Unlock()
		switch {
		case status == erp.CodeUnavailable.Status() && bytes.HasPrefix(answer, fmt.Appendf(nil, `{"cod_error":%d,`, erp.CodeUnavailable)):
			t.aTimeouts = append(t.aTimeouts, took)
		case status == erp.CodePaused.Status() && bytes.HasPrefix(answer, fmt.Appendf(nil, `{"cod_error":%d,`, erp.CodePaused)):
			t.aPaused = append(t.aPaused, took)
		default:
			t.other++
			t.firstErr = cmp.Or(t.firstErr, unexpected(status, answer))
		}
	}
	n := clients
	if baseA != "" {
		n *= 2
	}
	errs := make([]error, n)
	err := each(n, d+2*neighbourTimeout+callTimeout, func(i int) {
		if i < clients {
			errs[i] = loop(baseB, tokenB, false, onB)
		} else {
			errs[i] = loop(baseA, tokenA, polite, onA)
		}
	})
	for _, e := range append(errs, err) {
		if e != nil {
			return nil, e
		}
	}
	for _, l := range [][]time.Duration{t.b, t.aTimeouts, t.aPaused} {
		slices.Sort(l)
	}
	return t, nil
}
