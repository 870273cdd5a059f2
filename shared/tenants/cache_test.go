package tenants

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/erp"
)

// fakeFetcher counts fetches; fail switches it to failing.
type fakeFetcher struct {
	calls atomic.Int64
	delay time.Duration
	wait  chan struct{} // when not nil, a fetch ends once it is closed
	mu    sync.Mutex
	docs  map[string]Instance
	fail  error
}

func (f *fakeFetcher) Fetch(ctx context.Context, name string) (Instance, error) {
	f.calls.Add(1)
	time.Sleep(f.delay)
	if f.wait != nil {
		<-f.wait
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return Instance{}, f.fail
	}
	inst, ok := f.docs[name]
	if !ok {
		return Instance{}, ErrUnknown
	}
	return inst, nil
}

func (f *fakeFetcher) set(name, host string, fail error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.docs[name] = Instance{Connection: erp.Connection{Host: host}}
	f.fail = fail
}

// clock is a test's time, moved by the test: a busy machine must not pass
// a TTL the test means to stay within, as real sleeps of tens of
// milliseconds did under load.
type clock struct{ at atomic.Int64 }

func (c *clock) now() time.Time       { return time.Unix(0, c.at.Load()) }
func (c *clock) move(d time.Duration) { c.at.Add(int64(d)) }

func TestCache(t *testing.T) {
	ctx := context.Background()
	type step struct {
		sleep     time.Duration
		fail      error
		host      string // the source's document, "" to keep it
		refresh   bool
		wantHost  string
		wantErr   error
		wantCalls int64
		wantLogs  int // failed reads logged so far
	}
	opts := CacheOptions{TTL: 100 * time.Millisecond, NegativeTTL: 50 * time.Millisecond, ColdRetry: 20 * time.Millisecond, StaleFor: 200 * time.Millisecond, MinRefresh: 30 * time.Millisecond}
	tests := []struct {
		name  string
		steps []step
	}{
		{"hits within the TTL", []step{{host: "a", wantHost: "a", wantCalls: 1}, {wantHost: "a", wantCalls: 1}, {wantHost: "a", wantCalls: 1}}},
		{"fetched again after the TTL", []step{{host: "a", wantHost: "a", wantCalls: 1}, {sleep: 120 * time.Millisecond, host: "b", wantHost: "b", wantCalls: 2}}},
		{"stale while refreshes fail, then gone", []step{
			{host: "a", wantHost: "a", wantCalls: 1},
			// Served, and said: a change made meanwhile does not show.
			{sleep: 120 * time.Millisecond, fail: errors.New("throttled"), wantHost: "a", wantCalls: 2, wantLogs: 1},
			{wantHost: "a", wantCalls: 2, wantLogs: 1}, // not asked again before NegativeTTL
			{sleep: 250 * time.Millisecond, wantErr: ErrUnavailable, wantCalls: 3, wantLogs: 2},
		}},
		{"a malformed document is not papered over with the last good one", []step{
			{host: "a", wantHost: "a", wantCalls: 1},
			{sleep: 120 * time.Millisecond, fail: ErrMalformed, wantErr: ErrMalformed, wantCalls: 2, wantLogs: 1},
			{wantErr: ErrMalformed, wantCalls: 2, wantLogs: 1}, // not asked again before NegativeTTL
			{sleep: 60 * time.Millisecond, host: "b", wantHost: "b", wantCalls: 3, wantLogs: 1},
		}},
		// A moment of trouble at an environment's first request: with no
		// document to serve, asked again after ColdRetry (20 ms here),
		// not NegativeTTL.
		{"a cold read that failed is asked again after ColdRetry", []step{
			{host: "a", fail: errors.New("throttled"), wantErr: ErrUnavailable, wantCalls: 1, wantLogs: 1},
			{wantErr: ErrUnavailable, wantCalls: 1, wantLogs: 1},
			{sleep: 25 * time.Millisecond, host: "a", wantHost: "a", wantCalls: 2, wantLogs: 1},
		}},
		{"an unknown name is asked again only after NegativeTTL", []step{
			{fail: ErrUnknown, wantErr: ErrUnknown, wantCalls: 1},
			{sleep: 25 * time.Millisecond, wantErr: ErrUnknown, wantCalls: 1},
			{sleep: 30 * time.Millisecond, host: "a", wantHost: "a", wantCalls: 2},
		}},
		{"an unreadable secret is not asked at every request", []step{
			{host: "a", fail: errors.New("undecryptable"), wantErr: ErrUnavailable, wantCalls: 1, wantLogs: 1},
			{wantErr: ErrUnavailable, wantCalls: 1, wantLogs: 1},
			{sleep: 60 * time.Millisecond, host: "a", wantHost: "a", wantCalls: 2, wantLogs: 1},
		}},
		{"forced refresh bypasses the cache, at most once per MinRefresh", []step{
			{host: "a", wantHost: "a", wantCalls: 1},
			{sleep: 40 * time.Millisecond, host: "b", refresh: true, wantHost: "b", wantCalls: 2},
			{host: "c", refresh: true, wantHost: "b", wantCalls: 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeFetcher{docs: map[string]Instance{}}
			// Written by the fetch's goroutine before the lookup that
			// waits for it returns: read after it, never at once.
			var logs strings.Builder
			opts := opts
			opts.Log = slog.New(slog.NewTextHandler(&logs, nil))
			clk := &clock{}
			opts.Now = clk.now
			c := NewCache(f, opts)
			for i, s := range tt.steps {
				clk.move(s.sleep)
				if s.host != "" || s.fail != nil {
					host := s.host
					if host == "" {
						host = f.docs["x"].Host
					}
					fail := s.fail
					if fail != nil {
						fail = errors.Join(ErrUnavailable, fail)
					}
					f.set("x", host, fail)
				}
				lookup := c.Lookup
				if s.refresh {
					lookup = c.Refresh
				}
				inst, err := lookup(ctx, "x")
				if !errors.Is(err, s.wantErr) || (s.wantErr == nil && err != nil) || inst.Host != s.wantHost {
					t.Fatalf("step %d: got %q %v, want %q %v", i, inst.Host, err, s.wantHost, s.wantErr)
				}
				if got := f.calls.Load(); got != s.wantCalls {
					t.Fatalf("step %d: %d fetches, want %d", i, got, s.wantCalls)
				}
				if got := strings.Count(logs.String(), "instance document not read"); got != s.wantLogs || strings.Contains(logs.String(), "password") {
					t.Fatalf("step %d: %d failed reads logged, want %d:\n%s", i, got, s.wantLogs, logs.String())
				}
			}
		})
	}
}

func TestCacheUnknownIsCachedBriefly(t *testing.T) {
	f := &fakeFetcher{docs: map[string]Instance{}}
	clk := &clock{}
	c := NewCache(f, CacheOptions{NegativeTTL: 50 * time.Millisecond, Now: clk.now})
	for range 10 {
		if _, err := c.Lookup(context.Background(), "nadie"); !errors.Is(err, ErrUnknown) {
			t.Fatal(err)
		}
	}
	if n := f.calls.Load(); n != 1 {
		t.Fatalf("%d fetches for 10 lookups of an unknown name", n)
	}
	clk.move(60 * time.Millisecond)
	c.Lookup(context.Background(), "nadie")
	if n := f.calls.Load(); n != 2 {
		t.Fatalf("%d fetches after the negative TTL", n)
	}
}

func TestCacheIsBounded(t *testing.T) {
	f := &fakeFetcher{docs: map[string]Instance{"x": {}}}
	c := NewCache(f, CacheOptions{MaxEntries: 100, NegativeTTL: time.Hour})
	for i := range 1000 {
		c.Lookup(context.Background(), fmt.Sprint("name", i))
	}
	if _, err := c.Lookup(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if n := c.docs.Len(); n > 100 {
		t.Fatalf("%d entries held, bound 100", n)
	}
}

func TestCacheConcurrentFirstLookupsShareOneFetch(t *testing.T) {
	f := &fakeFetcher{docs: map[string]Instance{"x": {Connection: erp.Connection{Host: "a"}}}, delay: 50 * time.Millisecond}
	c := NewCache(f, CacheOptions{})
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if inst, err := c.Lookup(context.Background(), "x"); err != nil || inst.Host != "a" {
				t.Error(inst, err)
			}
		})
	}
	wg.Wait()
	if n := f.calls.Load(); n != 1 {
		t.Fatalf("%d fetches for 50 concurrent first lookups", n)
	}
}

func TestCacheCallerDeadline(t *testing.T) {
	// The fetch ends only once the lookup has returned: the caller's
	// deadline, not the race of two timers, decides.
	release := make(chan struct{})
	f := &fakeFetcher{docs: map[string]Instance{"x": {}}, wait: release}
	c := NewCache(f, CacheOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := c.Lookup(ctx, "x")
	close(release)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("got %v", err)
	}
}

func TestInstanceDocumentTokens(t *testing.T) {
	const doc = `{"host":"h","database":"d","user":"u"`
	tests := []struct {
		name    string
		extra   string
		wantErr string
		revoked string // an id that must be revoked
	}{
		{"revoked ids", `,"revoked_tokens":["0123456789abcdef0123456789abcdef"]`, "", "0123456789abcdef0123456789abcdef"},
		{"upper-case id revokes", `,"revoked_tokens":["0123456789ABCDEF0123456789ABCDEF"]`, "", "0123456789abcdef0123456789abcdef"},
		{"not an id", `,"revoked_tokens":["erpgw_k_0123"]`, "revoked_tokens[0] is not a token id", ""},
		{"retired hashes", `,"tokens":["sha256:00"]`, `"tokens" (token hashes) is retired`, ""},
		{"retired anonymous", `,"allow_anonymous":true`, `"allow_anonymous" moved to the access document`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inst, err := ParseInstance([]byte(doc + tt.extra + "}"))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !inst.Revoked(tt.revoked) || inst.Revoked("ffffffffffffffffffffffffffffffff") {
				t.Fatalf("revoked %v", inst.RevokedTokens)
			}
		})
	}
}
