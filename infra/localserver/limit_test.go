package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestLimitCountsWork: requests whose bodies are still arriving hold no
// slot; requests at work hold one each, and those beyond the bound are
// refused with 429 at once; a body larger than the handler's bound reaches
// it as larger.
func TestLimitCountsWork(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan string, 16)
	h := limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 8))
		if err != nil {
			http.Error(w, "too large", http.StatusRequestEntityTooLarge)
			return
		}
		entered <- string(b)
		<-release
		fmt.Fprint(w, "ok")
	}), func(*http.Request) bool { return true }, 2, 8)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	// Slow bodies, more than the bound.
	for range 5 {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 8\r\n\r\nabc")
	}
	post := func(body string) int {
		resp, err := http.Post(srv.URL, "application/json", strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests && len(resp.Header.Get("X-Request-Id")) != 32 {
			t.Errorf("a 429 without its request id: %v", resp.Header)
		}
		return resp.StatusCode
	}
	var wg sync.WaitGroup
	statuses := make(chan int, 2)
	for range 2 {
		wg.Go(func() { statuses <- post("work") })
	}
	for range 2 {
		if got := <-entered; got != "work" {
			t.Fatalf("the handler read %q", got)
		}
	}
	if got := post("more"); got != http.StatusTooManyRequests {
		t.Fatalf("beyond the bound: %d, want 429", got)
	}
	close(release)
	wg.Wait()
	close(statuses)
	for got := range statuses {
		if got != http.StatusOK {
			t.Fatalf("at work: %d", got)
		}
	}
	if got := post("123456789"); got != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body too large: %d", got)
	}
}
