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
	"time"
)

// TestLimitCountsWork: requests whose bodies are still arriving hold no
// slot; requests at work hold one each, and those beyond the bound are
// refused with 429 once they have waited their turn; a body larger than
// the handler's bound reaches it as larger.
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
	}), func(*http.Request) bool { return true }, 2, 8, 100*time.Millisecond)
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

// TestLimitServesWaitersInTurn: a request that finds every slot taken waits
// for one, and waiters are served in the order they came, so a client that
// waits as told is not overtaken by one that sends again at once; one whose
// turn does not come within the wait is refused with 429.
func TestLimitServesWaitersInTurn(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan string, 16)
	h := limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		entered <- string(b)
		<-release
		fmt.Fprint(w, "ok")
	}), func(*http.Request) bool { return true }, 1, 8, 10*time.Second)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	var wg sync.WaitGroup
	post := func(url, body string) int {
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, b := range []string{"first", "second", "third", "fourth"} {
		wg.Go(func() {
			if got := post(srv.URL, b); got != http.StatusOK {
				t.Errorf("%s: %d", b, got)
			}
		})
		if b == "first" {
			if got := <-entered; got != "first" {
				t.Fatalf("the handler read %q", got)
			}
			continue
		}
		// Each waiter well after the one before it, so their order is known
		// (a loopback request reaches its wait in about a millisecond).
		time.Sleep(250 * time.Millisecond)
	}
	for _, want := range []string{"second", "third", "fourth"} {
		release <- struct{}{}
		if got := <-entered; got != want {
			t.Fatalf("served %q, want %q next", got, want)
		}
	}
	release <- struct{}{}
	wg.Wait()

	short := httptest.NewServer(limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- "held"
		<-release
	}), func(*http.Request) bool { return true }, 1, 8, 50*time.Millisecond))
	t.Cleanup(short.Close)
	wg.Go(func() { post(short.URL, "a") })
	<-entered
	if got := post(short.URL, "b"); got != http.StatusTooManyRequests {
		t.Fatalf("past its wait: %d, want 429", got)
	}
	close(release)
	wg.Wait()
}
