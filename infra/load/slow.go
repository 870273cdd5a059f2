package main

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// slowClients measures what clients that send slowly cost everyone else: n
// connections to the local server (half send their headers a byte a second,
// half their body, with a valid token: the gateway reads it), each opened
// again when the server closes it, while one
// client sends normal reads for d. It prints how many normal reads failed
// and their latency.
func slowClients(ctx context.Context, o options, n int, d time.Duration) error {
	srv, err := startServer(o)
	if err != nil {
		return err
	}
	defer srv.stop()
	base := baseURL(srv.addr, o.instance)
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()

	var opened atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		u, err := url.Parse(base + "executequery")
		if err != nil {
			return err
		}
		head := "POST " + u.RequestURI() + " HTTP/1.1\r\nHost: x\r\n"
		rest := "X-Slow: " + strings.Repeat("a", 120) + "\r\n"
		if i%2 == 1 {
			// Headers complete, the body a byte at a time.
			head += "Authorization: Bearer " + o.token + "\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
			rest = `{"CLAVE":"Get_Referencias","CODIGO":"` + strings.Repeat("R", 120)
		}
		wg.Go(func() { trickle(ctx, srv.addr, head, rest, &opened) })
	}
	time.Sleep(time.Second) // every slow connection is open

	hc := newHTTPClient(1)
	var latencies []time.Duration
	failed := 0
	var firstErr error
	for ctx.Err() == nil {
		began := time.Now()
		status, answer, err := post(ctx, hc, base+"executequery", o.token, []byte(readBody))
		took := time.Since(began)
		if err == nil {
			err = wantData(status, answer)
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			failed++
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		latencies = append(latencies, took)
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	slices.Sort(latencies)
	r := result{latencies: latencies}
	fmt.Printf("%d slow connections (half slow headers, half unfinished bodies; %d opened in all) for %s:\n", n, opened.Load(), d)
	fmt.Printf("  normal reads: %d succeeded, %d failed; p50 %s, p99 %s, max %s\n",
		len(latencies), failed, ms(r.percentile(50)), ms(r.percentile(99)), ms(r.percentile(100)))
	if failed > 0 {
		return fmt.Errorf("%d normal reads failed beside slow clients; the first: %w", failed, firstErr)
	}
	return nil
}

// trickle keeps one slow connection open until ctx ends: it sends head, then
// rest a byte a second, and opens a new connection when the server closes
// this one.
func trickle(ctx context.Context, addr, head, rest string, opened *atomic.Int64) {
	for ctx.Err() == nil {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return
		}
		opened.Add(1)
		stop := context.AfterFunc(ctx, func() { c.Close() })
		if _, err := c.Write([]byte(head)); err == nil {
			for i := 0; ctx.Err() == nil && i < len(rest); i++ {
				if _, err := c.Write([]byte{rest[i]}); err != nil {
					break
				}
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
		}
		stop()
		c.Close()
	}
}
