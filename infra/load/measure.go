package main

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"
)

// turns is how many parts each kind's measurement at a level is cut into:
// raw and http take turns (raw, http, http, raw, ...), so a machine that
// slows down or speeds up during the run weighs on both alike.
const turns = 4

// measureLevels measures each of o.levels; serverPID is the local server's
// process, whose CPU counts in the box's.
func measureLevels(ctx context.Context, o options, db *sql.DB, base string, serverPID int) ([]result, error) {
	var results []result
	for _, c := range o.levels {
		r, h, err := measureLevel(ctx, o, db, base, c, serverPID)
		if err != nil {
			return nil, err
		}
		results = append(results, r, h)
	}
	return results, nil
}

// measureLevel measures c raw clients and c http clients, each for
// o.duration in all, in turns.
func measureLevel(ctx context.Context, o options, db *sql.DB, base string, c, serverPID int) (raw, web result, err error) {
	rcs, err := rawClients(ctx, db, c)
	if err != nil {
		return raw, web, err
	}
	defer closeAll(rcs)
	hcs, err := httpClients(base, o.token, c)
	if err != nil {
		return raw, web, err
	}
	defer closeAll(hcs)
	for _, cs := range [][]client{rcs, hcs} {
		if err := warmUp(cs); err != nil {
			return raw, web, fmt.Errorf("%d clients: warm-up: %w", c, err)
		}
	}
	raw, web = result{kind: "raw", clients: c, cpuKnown: true}, result{kind: "http", clients: c, cpuKnown: true}
	type kind struct {
		r  *result
		cs []client
	}
	order := []kind{{&raw, rcs}, {&web, hcs}}
	for range turns {
		for _, k := range order {
			part, err := measure(ctx, k.r.kind, k.cs, o.duration/turns, serverPID)
			if err != nil {
				return raw, web, err
			}
			k.r.add(part)
		}
		order[0], order[1] = order[1], order[0]
	}
	slices.Sort(raw.latencies)
	slices.Sort(web.latencies)
	return raw, web, nil
}

func reportFailures(results []result) int {
	failed := 0
	for _, r := range results {
		if r.errors > 0 {
			fmt.Fprintf(os.Stderr, "%d clients %s: %d failed requests, the first: %v\n", r.clients, r.kind, r.errors, r.firstErr)
			failed += r.errors
		}
	}
	return failed
}

// client is one simulated client: call makes one request, close releases
// what the client holds.
type client struct {
	call  func() error
	close func()
}

func closeAll(clients []client) {
	for _, c := range clients {
		c.close()
	}
}

// measure lets warm clients call as fast as they can for d, and records
// every successful call's latency and the CPU used (sampleCPU).
func measure(ctx context.Context, kind string, clients []client, d time.Duration, serverPID int) (result, error) {
	type tally struct {
		latencies []time.Duration
		errors    int
		firstErr  error
	}
	tallies := make([]tally, len(clients))
	cpuBefore, cpuErr := sampleCPU(serverPID)
	start := time.Now()
	stopAt := start.Add(d)
	err := each(len(clients), d+callTimeout, func(i int) {
		t := &tallies[i]
		for time.Now().Before(stopAt) && ctx.Err() == nil {
			began := time.Now()
			if err := clients[i].call(); err != nil {
				t.errors++
				t.firstErr = cmp.Or(t.firstErr, err)
				continue
			}
			t.latencies = append(t.latencies, time.Since(began))
		}
	})
	elapsed := time.Since(start)
	cpuAfter, cpuErrAfter := sampleCPU(serverPID)
	if err := cmp.Or(err, ctx.Err()); err != nil {
		return result{}, fmt.Errorf("%d clients %s: %w", len(clients), kind, err)
	}
	// A Firebird restarted meanwhile counts its CPU from zero again.
	used := cpuAfter.minus(cpuBefore)
	r := result{kind: kind, clients: len(clients), elapsed: elapsed, cpu: used,
		cpuKnown: cpuErr == nil && cpuErrAfter == nil && used.firebird >= 0 && used.box() >= 0}
	for _, t := range tallies {
		r.latencies = append(r.latencies, t.latencies...)
		r.errors += t.errors
		r.firstErr = cmp.Or(r.firstErr, t.firstErr)
	}
	return r, nil
}

// warmUp lets connections open and statements and the server's caches settle
// before anything is timed.
func warmUp(clients []client) error {
	errs := make([]error, len(clients))
	err := each(len(clients), warmUpCalls*callTimeout, func(i int) {
		for range warmUpCalls {
			if errs[i] = clients[i].call(); errs[i] != nil {
				return
			}
		}
	})
	return cmp.Or(err, cmp.Or(errs...))
}

// each runs fn(0) … fn(n-1) concurrently and waits for them at most limit,
// because a raw call has no deadline of its own (see rawClients).
func each(n int, limit time.Duration, fn func(i int)) error {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { fn(i) })
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-time.After(limit):
		return fmt.Errorf("clients still busy after %s", limit)
	}
}
