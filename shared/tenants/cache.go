package tenants

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrUnavailable means an instance's settings could not be read now.
var ErrUnavailable = errors.New("instance settings unavailable")

// Fetcher reads one instance's document from its source of truth.
type Fetcher interface {
	Fetch(ctx context.Context, name string) (Instance, error)
}

// CacheOptions tune a Cache; zero values take the defaults.
type CacheOptions struct {
	TTL          time.Duration // a document is fetched again after this (5m)
	NegativeTTL  time.Duration // an unknown name, or a failed refresh, is asked again after this (30s)
	StaleFor     time.Duration // past its TTL, a document still serves this long while refreshes fail (1h)
	MinRefresh   time.Duration // forced refreshes of one name at most this often (10s)
	FetchTimeout time.Duration // bound on one fetch (5s)
	MaxEntries   int           // names held at most; expired ones are swept first (10,000)
}

// Cache keeps the documents of one execution environment. Concurrent
// lookups of one name share one fetch. Cache is safe for concurrent use.
type Cache struct {
	fetcher Fetcher
	opts    CacheOptions
	mu      sync.Mutex
	entries map[string]*entry
}

type entry struct {
	inst     Instance
	known    bool      // inst holds a document fetched at fetched
	err      error     // why the last fetch failed, while it is not asked again
	fetched  time.Time // last successful fetch
	forced   time.Time // last Refresh that went to the source
	expires  time.Time // ask the source again after this
	inflight *flight
}

type flight struct {
	done chan struct{}
	inst Instance
	err  error
}

// NewCache caches fetcher's documents.
func NewCache(fetcher Fetcher, opts CacheOptions) *Cache {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&opts.TTL, 5*time.Minute)
	def(&opts.NegativeTTL, 30*time.Second)
	def(&opts.StaleFor, time.Hour)
	def(&opts.MinRefresh, 10*time.Second)
	def(&opts.FetchTimeout, 5*time.Second)
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = 10_000
	}
	return &Cache{fetcher: fetcher, opts: opts, entries: make(map[string]*entry)}
}

// Lookup returns the named instance, from the cache while it is fresh.
func (c *Cache) Lookup(ctx context.Context, name string) (Instance, error) {
	c.mu.Lock()
	e := c.entry(name)
	if time.Now().Before(e.expires) {
		inst, known, err := e.inst, e.known, e.err
		c.mu.Unlock()
		switch {
		case err != nil:
			return Instance{}, err
		case !known:
			return Instance{}, ErrUnknown
		}
		return inst, nil
	}
	f := c.fetch(ctx, name, e)
	c.mu.Unlock()
	return c.wait(ctx, f)
}

// Refresh fetches the named instance again, bypassing the cache (after the
// database refused its credentials), but at most once per MinRefresh, so a
// wrong password cannot turn every request into a Secrets Manager call.
func (c *Cache) Refresh(ctx context.Context, name string) (Instance, error) {
	c.mu.Lock()
	e := c.entry(name)
	if e.inflight == nil && time.Since(e.forced) < c.opts.MinRefresh {
		c.mu.Unlock()
		return c.Lookup(ctx, name)
	}
	e.forced = time.Now()
	f := c.fetch(ctx, name, e)
	c.mu.Unlock()
	return c.wait(ctx, f)
}

func (c *Cache) entry(name string) *entry {
	e, ok := c.entries[name]
	if !ok {
		if len(c.entries) >= c.opts.MaxEntries {
			c.sweep()
		}
		e = &entry{}
		c.entries[name] = e
	}
	return e
}

// sweep makes room for one entry; c.mu is held. Entries past any use go
// first; if none is, one not being fetched goes, so the cache never grows
// past its bound whatever names it is asked for.
func (c *Cache) sweep() {
	now := time.Now()
	for name, e := range c.entries {
		if e.inflight == nil && now.After(e.expires) && (!e.known || now.After(e.fetched.Add(c.opts.TTL+c.opts.StaleFor))) {
			delete(c.entries, name)
		}
	}
	for name, e := range c.entries {
		if len(c.entries) < c.opts.MaxEntries {
			return
		}
		if e.inflight == nil {
			delete(c.entries, name)
		}
	}
}

// fetch starts a fetch of name unless one is under way; c.mu is held. The
// fetch outlives a caller who gives up, so the others waiting still get it;
// it keeps the values of the caller's ctx (its request's ids and count).
func (c *Cache) fetch(ctx context.Context, name string, e *entry) *flight {
	if e.inflight != nil {
		return e.inflight
	}
	f := &flight{done: make(chan struct{})}
	e.inflight = f
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.FetchTimeout)
		defer cancel()
		inst, err := c.fetcher.Fetch(ctx, name)

		c.mu.Lock()
		now := time.Now()
		e.inflight = nil
		e.err = nil
		switch {
		case err == nil:
			e.inst, e.known, e.fetched, e.expires = inst, true, now, now.Add(c.opts.TTL)
		case errors.Is(err, ErrUnknown):
			e.inst, e.known, e.expires = Instance{}, false, now.Add(c.opts.NegativeTTL)
		case e.known && !errors.Is(err, ErrMalformed) && now.Before(e.fetched.Add(c.opts.TTL+c.opts.StaleFor)):
			// Serve the last good document a while longer; ask again later
			// rather than on every request. Not past a malformed one: its
			// author's change (a token revoked, say) would silently not
			// take effect here while a new environment refuses to serve.
			inst, err = e.inst, nil
			e.expires = now.Add(c.opts.NegativeTTL)
		default:
			// A secret that cannot be read (undecryptable, malformed, a
			// throttled Secrets Manager) is asked again later, not on
			// every request.
			e.inst, e.known, e.err, e.expires = Instance{}, false, err, now.Add(c.opts.NegativeTTL)
		}
		c.mu.Unlock()

		f.inst, f.err = inst, err
		close(f.done)
	}()
	return f
}

func (c *Cache) wait(ctx context.Context, f *flight) (Instance, error) {
	select {
	case <-f.done:
		return f.inst, f.err
	case <-ctx.Done():
		return Instance{}, errors.Join(ErrUnavailable, ctx.Err())
	}
}
