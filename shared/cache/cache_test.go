package cache

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a test's time, moved by the test.
type clock struct{ at atomic.Int64 }

func (c *clock) now() time.Time       { return time.Unix(0, c.at.Load()) }
func (c *clock) move(d time.Duration) { c.at.Add(int64(d)) }

// settle waits for a fetch in the background to end.
func settle[K comparable, V any](c *Cache[K, V], key K) {
	for c.Fetching(key) {
		time.Sleep(time.Millisecond)
	}
}

func TestCache(t *testing.T) {
	errDown := errors.New("the source did not answer")
	errBad := errors.New("the value is malformed")
	o := Options{TTL: time.Minute, NegativeTTL: 10 * time.Second, StaleFor: time.Hour, MinRefresh: 5 * time.Second,
		Keep: func(err error) bool { return errors.Is(err, errDown) }}
	background := o
	background.Background = true
	// Each step moves the clock, sets the source (src, kept when empty;
	// fail, for that step only) and asks for the key.
	type step struct {
		move    time.Duration
		src     string
		fail    error
		refresh bool
		want    string
		wantErr error
		fetches int64
	}
	tests := []struct {
		name  string
		o     Options
		steps []step
	}{
		{"a miss, hits within the TTL, a miss past it", o, []step{
			{src: "a", want: "a", fetches: 1},
			{move: 59 * time.Second, src: "b", want: "a", fetches: 1},
			{move: time.Second, want: "b", fetches: 2},
		}},
		{"a failure is answered from memory for NegativeTTL", o, []step{
			{fail: errBad, wantErr: errBad, fetches: 1},
			{move: 9 * time.Second, src: "a", wantErr: errBad, fetches: 1},
			{move: time.Second, want: "a", fetches: 2},
		}},
		{"stale while the source is down, up to the bound", o, []step{
			{src: "a", want: "a", fetches: 1},
			{move: time.Minute, fail: errDown, want: "a", fetches: 2},
			{move: 9 * time.Second, fail: errDown, want: "a", fetches: 2},
			{move: time.Second, fail: errDown, want: "a", fetches: 3},
			{move: time.Hour - 11*time.Second, fail: errDown, want: "a", fetches: 4},
			// Asked again at the bound, not NegativeTTL after the last fetch.
			{move: time.Second, fail: errDown, wantErr: errDown, fetches: 5},
			{move: time.Second, src: "b", wantErr: errDown, fetches: 5},
		}},
		{"a failure Keep refuses replaces the value at once", o, []step{
			{src: "a", want: "a", fetches: 1},
			{move: time.Minute, fail: errBad, wantErr: errBad, fetches: 2},
		}},
		{"refresh ignores the TTL, at most once per MinRefresh", o, []step{
			{src: "a", want: "a", fetches: 1},
			{move: time.Second, src: "b", refresh: true, want: "b", fetches: 2},
			{move: 4 * time.Second, src: "c", refresh: true, want: "b", fetches: 2},
			{move: time.Second, refresh: true, want: "c", fetches: 3},
		}},
		{"background: the stale value at once, the new one after", background, []step{
			{src: "a", want: "a", fetches: 1},
			{move: time.Minute, src: "b", want: "a", fetches: 2},
			{want: "b", fetches: 2},
			{move: time.Minute, fail: errDown, want: "b", fetches: 3},
			{move: time.Hour, fail: errDown, wantErr: errDown, fetches: 4},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &clock{}
			tt.o.Now = clk.now
			c := New[string, string](tt.o)
			var fetches atomic.Int64
			src := ""
			for i, s := range tt.steps {
				clk.move(s.move)
				if s.src != "" {
					src = s.src
				}
				val, fail := src, s.fail
				fetch := func(context.Context) (string, error) {
					fetches.Add(1)
					if fail != nil {
						return "ignored", fail
					}
					return val, nil
				}
				get := c.Get
				if s.refresh {
					get = c.Refresh
				}
				got, err := get(context.Background(), "k", fetch)
				settle(c, "k")
				if got != s.want || !errors.Is(err, s.wantErr) || (s.wantErr == nil && err != nil) {
					t.Fatalf("step %d: got %q, %v; want %q, %v", i, got, err, s.want, s.wantErr)
				}
				if n := fetches.Load(); n != s.fetches {
					t.Fatalf("step %d: %d fetches, want %d", i, n, s.fetches)
				}
			}
		})
	}
}

// TestConcurrentCallsShareOneFetch: callers wait for the one fetch of a
// key; one who gives up returns at once, and the fetch goes on for the
// others, uncancelled.
func TestConcurrentCallsShareOneFetch(t *testing.T) {
	c := New[string, int](Options{TTL: time.Minute})
	started, release := make(chan struct{}), make(chan struct{})
	var fetches atomic.Int64
	fetch := func(ctx context.Context) (int, error) {
		if fetches.Add(1) == 1 {
			close(started)
		}
		<-release
		return 7, ctx.Err()
	}
	leaving, leave := context.WithCancel(context.Background())
	left := make(chan error)
	go func() {
		_, err := c.Get(leaving, "k", fetch)
		left <- err
	}()
	<-started
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if v, err := c.Get(context.Background(), "k", fetch); v != 7 || err != nil {
				t.Error(v, err)
			}
		})
	}
	leave()
	if err := <-left; !errors.Is(err, context.Canceled) {
		t.Fatalf("the caller who gave up: %v", err)
	}
	close(release)
	wg.Wait()
	if n := fetches.Load(); n != 1 {
		t.Fatalf("%d fetches for 51 concurrent calls", n)
	}
}

// TestFetchDeadline: a fetch is bounded by Timeout, else by the deadline of
// the call that starts it.
func TestFetchDeadline(t *testing.T) {
	soon := time.Now().Add(time.Minute)
	tests := []struct {
		name     string
		timeout  time.Duration
		deadline time.Time
		want     time.Duration // about, from now; 0: none
	}{
		{"Timeout", time.Second, soon, time.Second},
		{"the caller's deadline", 0, soon, time.Minute},
		{"neither", 0, time.Time{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if !tt.deadline.IsZero() {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, tt.deadline)
				defer cancel()
			}
			c := New[string, time.Duration](Options{Timeout: tt.timeout})
			got, _ := c.Get(ctx, "k", func(ctx context.Context) (time.Duration, error) {
				d, ok := ctx.Deadline()
				if !ok {
					return 0, nil
				}
				return time.Until(d), nil
			})
			if got > tt.want || got < tt.want-10*time.Second {
				t.Fatalf("the fetch's deadline is in %s, want %s", got, tt.want)
			}
		})
	}
}

// TestEntriesAreBounded: past MaxEntries, the entries that serve nothing
// go first, all of them; then any.
func TestEntriesAreBounded(t *testing.T) {
	clk := &clock{}
	c := New[int, int](Options{TTL: time.Minute, MaxEntries: 10, Now: clk.now})
	var fetches atomic.Int64
	get := func(keys ...int) {
		for _, k := range keys {
			c.Get(context.Background(), k, func(context.Context) (int, error) { fetches.Add(1); return k, nil })
		}
	}
	get(0, 1, 2, 3, 4)
	clk.move(time.Minute)
	get(5, 6, 7, 8, 9)
	get(10, 5, 6, 7, 8, 9)
	if n, f := c.Len(), fetches.Load(); n != 6 || f != 11 {
		t.Fatalf("%d entries held and %d fetches, want the 5 expired gone and 11", n, f)
	}
	for k := range 100 {
		get(100 + k)
	}
	if n := c.Len(); n > 10 {
		t.Fatalf("%d entries held, bound 10", n)
	}
}

// TestColdRetryBacksOff: a key with nothing to serve whose fetches keep
// failing is asked again after ColdRetry, then twice as long at each
// failure in a row, never longer than NegativeTTL; a value fetched starts
// it over. Failures Keep refuses wait NegativeTTL from the first.
func TestColdRetryBacksOff(t *testing.T) {
	clk := &clock{}
	unanswered, unknown := errors.New("did not answer"), errors.New("unknown")
	c := New[string, int](Options{TTL: time.Hour, NegativeTTL: 30 * time.Second, ColdRetry: 5 * time.Second, Now: clk.now,
		Keep: func(err error) bool { return errors.Is(err, unanswered) }})
	// Read by the fetch's goroutine, written only once settle has seen
	// it end.
	fail, fetches := unanswered, 0
	get := func() error {
		_, err := c.Get(context.Background(), "k", func(context.Context) (int, error) {
			fetches++
			if fail != nil {
				return 0, fail
			}
			return 1, nil
		})
		settle(c, "k")
		return err
	}
	// When each fetch after the first came, in seconds from the last.
	var gaps []int
	last := 0
	get()
	for s := 1; s <= 130; s++ {
		clk.move(time.Second)
		before := fetches
		get()
		if fetches > before {
			gaps = append(gaps, s-last)
			last = s
		}
	}
	if want := []int{5, 10, 20, 30, 30, 30}; !slices.Equal(gaps[:min(len(gaps), len(want))], want) {
		t.Fatalf("asked again after %v s, want %v", gaps, want)
	}
	fail = nil
	for clk.move(time.Second); get() != nil; clk.move(time.Second) {
	}
	fail = unanswered
	c.Refresh(context.Background(), "k", func(context.Context) (int, error) { return 0, unanswered })
	clk.move(2 * time.Hour)
	before := fetches
	get()
	clk.move(5 * time.Second)
	get()
	if fetches-before != 2 {
		t.Fatalf("a value fetched did not start the back-off over: %d fetches", fetches-before)
	}
	fail = unknown
	clk.move(time.Hour)
	before = fetches
	get()
	clk.move(29 * time.Second)
	get()
	if fetches-before != 1 {
		t.Fatalf("a failure Keep refuses was asked again within NegativeTTL: %d fetches", fetches-before)
	}
}
