// Package cache keeps what is costly to read, so that a burst of requests
// reads it once and a source that stops answering stops nothing at once.
package cache

import (
	"context"
	"sync"
	"time"
)

// Options say how long values and failures serve; zero turns a feature off.
type Options struct {
	TTL time.Duration // a value is fetched again once its fetch began longer ago
	// NegativeTTL: a failure is answered from memory this long, so that a
	// key that does not exist, or a source that refuses, is not asked at
	// every call.
	NegativeTTL time.Duration
	// ColdRetry: a failure Keep accepts, for a key with no value to serve
	// (its first fetch, or a value past its bound), is asked again after
	// this instead, doubled at each failure in a row up to NegativeTTL:
	// nothing is served meanwhile, so a source's moment of trouble must
	// not refuse the key for long, and a lasting one is not asked harder
	// than NegativeTTL allows. 0: NegativeTTL.
	ColdRetry time.Duration
	// StaleFor: past its TTL, a value serves this much longer while fetches
	// fail with errors Keep accepts; never longer, however they fail.
	StaleFor time.Duration
	// Keep tells the failures a value outlives (a source that did not
	// answer) from those that replace it (an answer: the key is unknown,
	// its value malformed). nil: none is outlived.
	Keep func(error) bool
	// Background: past its TTL, a value that still serves is returned at
	// once while it is fetched again, rather than after the fetch.
	Background bool
	MinRefresh time.Duration // Refresh fetches a key at most once in this long
	// Timeout bounds a fetch; 0 leaves it the deadline of the call that
	// starts it.
	Timeout    time.Duration
	MaxEntries int // bound on the keys held
	// Now is the clock (tests). Its readings are taken by the wall clock
	// alone: an execution environment frozen between invocations must see
	// the hours it slept, which its monotonic clock may not count.
	Now func() time.Time
}

// Cache holds one value, or failure, per key. Concurrent calls for a key
// share one fetch. Cache is safe for concurrent use.
type Cache[K comparable, V any] struct {
	o       Options
	mu      sync.Mutex
	entries map[K]*entry[V]
}

type entry[V any] struct {
	val      V
	ok       bool          // val holds a fetched value
	err      error         // why there is none, when !ok
	at       time.Time     // when val's fetch began
	forced   time.Time     // when the latest Refresh's fetch began
	until    time.Time     // answered from memory before this
	fetching chan struct{} // closed when the fetch under way ends
	cold     int           // failures in a row with nothing to serve (ColdRetry)
}

// New makes an empty cache.
func New[K comparable, V any](o Options) *Cache[K, V] {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	o.Now = func() time.Time { return now().Round(0) }
	return &Cache[K, V]{o: o, entries: make(map[K]*entry[V])}
}

// Get returns key's value or failure: from memory while it is fresh, else
// from fetch, or from the fetch of key already under way. It waits at most
// until ctx ends; the fetch goes on for the others waiting.
func (c *Cache[K, V]) Get(ctx context.Context, key K, fetch func(context.Context) (V, error)) (V, error) {
	return c.get(ctx, key, fetch, false)
}

// Refresh is Get ignoring the TTL, for a value found wrong (credentials the
// database refuses, say), except within MinRefresh of the last Refresh of
// key that fetched: so that however often callers find it wrong, the
// source is asked no more often than that. An ordinary fetch does not
// count: a value read a moment before a rotation is no less wrong.
func (c *Cache[K, V]) Refresh(ctx context.Context, key K, fetch func(context.Context) (V, error)) (V, error) {
	return c.get(ctx, key, fetch, true)
}

func (c *Cache[K, V]) get(ctx context.Context, key K, fetch func(context.Context) (V, error), force bool) (V, error) {
	c.mu.Lock()
	now := c.o.Now()
	e := c.entry(key, now)
	force = force && (e.fetching != nil || now.Sub(e.forced) >= c.o.MinRefresh)
	if !force && now.Before(e.until) {
		defer c.mu.Unlock()
		return e.val, e.err
	}
	done := e.fetching
	if done == nil {
		done = c.fetch(ctx, e, fetch, now)
		if force {
			e.forced = now
		}
	}
	stale, served := !force && c.o.Background && c.serves(e, now), e.val
	c.mu.Unlock()
	if stale {
		return served, nil
	}
	select {
	case <-done:
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return e.val, e.err
}

// fetch starts a fetch of e's key; c.mu is held. The fetch keeps ctx's
// values (a request's ids, for its logs) but not its cancellation: others
// may come to wait for it.
func (c *Cache[K, V]) fetch(ctx context.Context, e *entry[V], fetch func(context.Context) (V, error), began time.Time) chan struct{} {
	done := make(chan struct{})
	e.fetching = done
	fctx, cancel := context.WithoutCancel(ctx), context.CancelFunc(func() {})
	if c.o.Timeout > 0 {
		fctx, cancel = context.WithTimeout(fctx, c.o.Timeout)
	} else if deadline, ok := ctx.Deadline(); ok {
		fctx, cancel = context.WithDeadline(fctx, deadline)
	}
	go func() {
		defer close(done)
		defer cancel()
		v, err := fetch(fctx)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.settle(e, v, err, began)
	}()
	return done
}

// settle records a fetch's outcome in e; c.mu is held.
func (c *Cache[K, V]) settle(e *entry[V], v V, err error, began time.Time) {
	now := c.o.Now()
	e.fetching = nil
	switch {
	case err == nil:
		e.val, e.ok, e.err, e.at, e.until = v, true, nil, began, began.Add(c.o.TTL)
		e.cold = 0
	case c.o.Keep != nil && c.o.Keep(err) && c.serves(e, now):
		// Asked again after NegativeTTL rather than at every call, and
		// never served past its bound.
		e.until = now.Add(c.o.NegativeTTL)
		if end := e.at.Add(c.o.TTL + c.o.StaleFor); end.Before(e.until) {
			e.until = end
		}
	default:
		var zero V
		ttl := c.o.NegativeTTL
		if c.o.ColdRetry > 0 && c.o.Keep != nil && c.o.Keep(err) {
			ttl = min(c.o.ColdRetry<<min(e.cold, 16), c.o.NegativeTTL)
			e.cold++
		}
		e.val, e.ok, e.err, e.until = zero, false, err, now.Add(ttl)
	}
}

// serves reports whether e holds a value young enough to serve at now.
func (c *Cache[K, V]) serves(e *entry[V], now time.Time) bool {
	return e.ok && now.Before(e.at.Add(c.o.TTL+c.o.StaleFor))
}

// entry is key's, made on first use; c.mu is held. A full cache drops the
// entries that serve nothing first, then any not being fetched: whatever
// keys callers make up, it stays within its bound.
func (c *Cache[K, V]) entry(key K, now time.Time) *entry[V] {
	if e, ok := c.entries[key]; ok {
		return e
	}
	if c.o.MaxEntries > 0 && len(c.entries) >= c.o.MaxEntries {
		for k, e := range c.entries {
			if e.fetching == nil && !now.Before(e.until) && !c.serves(e, now) {
				delete(c.entries, k)
			}
		}
		for k, e := range c.entries {
			if len(c.entries) < c.o.MaxEntries {
				break
			}
			if e.fetching == nil {
				delete(c.entries, k)
			}
		}
	}
	e := &entry[V]{}
	c.entries[key] = e
	return e
}

// Len is how many keys are held.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// Fetching reports whether key is being fetched: a test waits on it for a
// fetch in the background to end.
func (c *Cache[K, V]) Fetching(key K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	return ok && e.fetching != nil
}
