package tenants

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/erp-gateway/gateway/shared/cache"
)

// ErrUnavailable means an instance's settings could not be read now.
var ErrUnavailable = errors.New("instance settings unavailable")

// Fetcher reads one instance's document from its source of truth.
type Fetcher interface {
	Fetch(ctx context.Context, name string) (Instance, error)
}

// CacheOptions tune a Cache; zero values take the defaults.
type CacheOptions struct {
	TTL         time.Duration // a document is fetched again after this (5m)
	NegativeTTL time.Duration // an unknown name, or a failed refresh, is asked again after this (30s)
	// ColdRetry: a name with no document to serve whose read failed (a
	// throttled Secrets Manager at an environment's first request) is
	// asked again after this (5s), doubled at each failure in a row up to
	// NegativeTTL.
	ColdRetry    time.Duration
	StaleFor     time.Duration // past its TTL, a document still serves this long while refreshes fail (1h)
	MinRefresh   time.Duration // forced refreshes of one name at most this often (10s)
	FetchTimeout time.Duration // bound on one fetch (5s)
	MaxEntries   int           // names held at most; expired ones are swept first (10,000)
	// Now is the clock (tests); nil: the wall clock.
	Now func() time.Time
	// Log says when a document could not be read: a request may then be
	// served the last one read, and answer 200 where the reason for a
	// change not taking effect must still show. nil: nowhere.
	Log *slog.Logger
}

// Defaults of CacheOptions.
const (
	DefaultTTL          = 5 * time.Minute
	DefaultNegativeTTL  = 30 * time.Second
	DefaultColdRetry    = 5 * time.Second
	DefaultStaleFor     = time.Hour
	DefaultMinRefresh   = 10 * time.Second
	DefaultFetchTimeout = 5 * time.Second
	DefaultMaxEntries   = 10_000
)

// Cache keeps the documents of one execution environment. Concurrent
// lookups of one name share one fetch. Cache is safe for concurrent use.
type Cache struct {
	fetcher Fetcher
	docs    *cache.Cache[string, Instance]
	log     *slog.Logger
}

// NewCache caches fetcher's documents.
func NewCache(fetcher Fetcher, opts CacheOptions) *Cache {
	opts.TTL = cmp.Or(opts.TTL, DefaultTTL)
	opts.NegativeTTL = cmp.Or(opts.NegativeTTL, DefaultNegativeTTL)
	opts.ColdRetry = min(cmp.Or(opts.ColdRetry, DefaultColdRetry), opts.NegativeTTL)
	opts.StaleFor = cmp.Or(opts.StaleFor, DefaultStaleFor)
	opts.MinRefresh = cmp.Or(opts.MinRefresh, DefaultMinRefresh)
	opts.FetchTimeout = cmp.Or(opts.FetchTimeout, DefaultFetchTimeout)
	opts.MaxEntries = cmp.Or(opts.MaxEntries, DefaultMaxEntries)
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Cache{fetcher: fetcher, log: log, docs: cache.New[string, Instance](cache.Options{
		TTL:         opts.TTL,
		NegativeTTL: opts.NegativeTTL,
		ColdRetry:   opts.ColdRetry,
		StaleFor:    opts.StaleFor,
		// Serve the last good document a while longer when the source does
		// not answer. Not past a malformed one: its author's change (a token
		// revoked, say) would silently not take effect here while a new
		// environment refuses to serve. A secret that cannot be read
		// (undecryptable, malformed, a throttled Secrets Manager) is asked
		// again after NegativeTTL, not on every request; after ColdRetry
		// when the source did not answer and nothing else serves.
		Keep:       func(err error) bool { return !errors.Is(err, ErrUnknown) && !errors.Is(err, ErrMalformed) },
		MinRefresh: opts.MinRefresh,
		Timeout:    opts.FetchTimeout,
		MaxEntries: opts.MaxEntries,
		Now:        opts.Now,
	})}
}

// Lookup returns the named instance, from the cache while it is fresh.
func (c *Cache) Lookup(ctx context.Context, name string) (Instance, error) {
	return c.get(ctx, name, c.docs.Get)
}

// Refresh fetches the named instance again, bypassing the cache (after the
// database refused its credentials), but at most once per MinRefresh, so a
// wrong password cannot turn every request into a Secrets Manager call.
func (c *Cache) Refresh(ctx context.Context, name string) (Instance, error) {
	return c.get(ctx, name, c.docs.Refresh)
}

func (c *Cache) get(ctx context.Context, name string, get func(context.Context, string, func(context.Context) (Instance, error)) (Instance, error)) (Instance, error) {
	inst, err := get(ctx, name, func(ctx context.Context) (Instance, error) {
		inst, err := c.fetcher.Fetch(ctx, name)
		// Failures are remembered (NegativeTTL; ColdRetry, doubling, while
		// nothing serves): a name's failed reads are logged as seldom.
		if err != nil && !errors.Is(err, ErrUnknown) {
			c.log.WarnContext(ctx, "instance document not read: the last one read, if any, still serves until its stale bound, unless the document is malformed",
				"instance", name, "err", err.Error())
		}
		return inst, err
	})
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		// The caller gave up waiting: said as a failed fetch says it.
		return Instance{}, errors.Join(ErrUnavailable, err)
	}
	return inst, err
}
