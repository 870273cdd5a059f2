package access

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/erp-gateway/gateway/shared/erp"
)

// Load reads the access document's bytes from where it lives.
type Load func(ctx context.Context) ([]byte, error)

// Options say how often the access document is read and how long one read
// may be trusted. Zero values take the defaults below.
type Options struct {
	// Every: a document older than this is read again, in the background
	// while it may still be trusted. 0 reads it once (a file, an inline
	// document): then it never goes stale.
	Every time.Duration
	// MaxAge: tokens are refused (erp.CodeAccessStale) once the last good
	// read is older than this, as a key removed since then must stop
	// working even where the document cannot be read.
	MaxAge time.Duration
	// Retry: while tokens are refused, at most one read per Retry; requests
	// arriving during a read wait for it.
	Retry time.Duration
	// Timeout bounds one read.
	Timeout time.Duration
	// Wait bounds how long a request waits for a read while tokens are
	// refused: a read that takes longer is failing, and its refusal should
	// not cost the caller the whole Timeout.
	Wait time.Duration
	// Now is the clock (tests).
	Now func() time.Time
}

// Defaults of Options.
const (
	DefaultEvery   = 5 * time.Minute
	DefaultMaxAge  = time.Hour
	DefaultRetry   = 5 * time.Second
	DefaultTimeout = 3 * time.Second
	DefaultWait    = time.Second
)

// state is one read's result: the document in force and when it was read,
// or why there is none (never read, or the last read was malformed).
type state struct {
	doc  *Document
	read time.Time
	err  error
}

// Current holds the access document of one execution environment, read at
// start-up and again once it is older than Options.Every, so a key added for
// a rotation reaches running environments without a deploy. A read that
// fails keeps the document in force until Options.MaxAge; a read that finds
// a malformed document refuses every token at once, as a new environment
// that reads it does (README, "Tokens"). Current is safe for concurrent use.
type Current struct {
	load Load
	o    Options
	log  *slog.Logger
	st   atomic.Pointer[state]
	// tried is when the last read started, in unix nanoseconds.
	tried atomic.Int64

	mu      sync.Mutex
	reading chan struct{} // closed when the read in flight ends
}

// Start reads the document once. A source read only once (Every 0) must
// read now or Start fails; one read again keeps trying at requests, which
// are refused until a read succeeds.
func Start(ctx context.Context, load Load, o Options, log *slog.Logger) (*Current, error) {
	if o.Every > 0 {
		o.MaxAge = cmp.Or(o.MaxAge, DefaultMaxAge)
		// Never slower than the regular re-read.
		o.Retry = cmp.Or(o.Retry, min(DefaultRetry, o.Every))
	}
	o.Timeout = cmp.Or(o.Timeout, DefaultTimeout)
	o.Wait = cmp.Or(o.Wait, DefaultWait)
	if o.Now == nil {
		o.Now = time.Now
	}
	c := &Current{load: load, o: o, log: log}
	c.st.Store(&state{err: errors.New("the access document was never read")})
	c.tried.Store(o.Now().UnixNano())
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	err := c.read(ctx)
	if err != nil && o.Every <= 0 {
		return nil, err
	}
	return c, nil
}

// Static holds doc for good: tests and tools.
func Static(doc *Document) *Current {
	c := &Current{o: Options{Now: time.Now}}
	c.st.Store(&state{doc: doc})
	return c
}

// read reads the document and puts the result in force.
func (c *Current) read(ctx context.Context) error {
	data, err := c.load(ctx)
	if err != nil {
		err = fmt.Errorf("reading the access document: %w", err)
		if c.st.Load().doc != nil {
			c.log.Warn("keeping the access document in force", "err", err, "read_at", c.st.Load().read)
		} else {
			c.log.Error("no access document: tokens are refused", "err", err)
		}
		return err
	}
	doc, err := Parse(data)
	if err != nil {
		c.log.Error("the access document is malformed: tokens are refused until it is mended", "err", err)
		c.st.Store(&state{err: err})
		return err
	}
	c.st.Store(&state{doc: doc, read: c.o.Now().Round(0)})
	return nil
}

// trusted is the document in force at now, or why tokens cannot be checked.
func (c *Current) trusted(now time.Time) (*Document, error) {
	s := c.st.Load()
	switch {
	case s.doc == nil:
		return nil, s.err
	// The wall clock: an environment frozen between invocations must see
	// the hours it slept.
	case c.o.MaxAge > 0 && now.Round(0).Sub(s.read) > c.o.MaxAge:
		return nil, fmt.Errorf("the access document was last read at %s, longer ago than %s", s.read.UTC().Format(time.RFC3339), c.o.MaxAge)
	}
	return s.doc, nil
}

// Document returns the document in force. A read is started by time only,
// never by what a request carries, so strangers cannot make it happen more
// often: in the background while the document may be trusted; while it may
// not, ctx waits for a read (at most one per Options.Retry).
func (c *Current) Document(ctx context.Context) (*Document, error) {
	now := c.o.Now()
	doc, err := c.trusted(now)
	if c.o.Every <= 0 {
		return doc, err
	}
	since := now.Sub(time.Unix(0, c.tried.Load()))
	if err == nil {
		if since > c.o.Every {
			c.start(now)
		}
		return doc, nil
	}
	done := c.inFlight()
	if done == nil && since >= c.o.Retry {
		done = c.start(now)
	}
	if done != nil {
		wait := time.NewTimer(c.o.Wait)
		defer wait.Stop()
		select {
		case <-done:
		case <-wait.C:
		case <-ctx.Done():
		}
	}
	return c.trusted(c.o.Now())
}

func (c *Current) inFlight() chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reading
}

// start begins a read unless one is in flight, and returns its end. The
// read has its own deadline: the request that started it may go away.
func (c *Current) start(now time.Time) chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reading != nil {
		return c.reading
	}
	done := make(chan struct{})
	c.reading = done
	c.tried.Store(now.UnixNano())
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.o.Timeout)
		defer cancel()
		c.read(ctx) //nolint:errcheck // logged by read; the state says the rest
		c.mu.Lock()
		c.reading = nil
		c.mu.Unlock()
		close(done)
	}()
	return done
}

// Authorize checks a request's Authorization header values for instance and
// returns what they grant, or the refusal: erp.Unauthorized for anything
// wrong with the credentials, erp.CodeTokenExpired for a genuine token past
// its expiry, erp.CodeAccessStale when no document can be trusted. Several
// Authorization headers are refused: proxies and API Gateway disagree on
// which one counts.
func (c *Current) Authorize(ctx context.Context, instance string, authorization []string) (erp.Grant, *erp.Error) {
	d, err := c.Document(ctx)
	if err != nil {
		refused := erp.Refuse(erp.CodeAccessStale, "tokens cannot be checked right now; try again later")
		refused.RetryAfter = c.o.Retry
		return erp.Grant{}, refused
	}
	switch {
	case len(authorization) > 1:
		return erp.Grant{}, erp.Unauthorized()
	case d.Anonymous(instance):
		return erp.Grant{}, nil
	case len(authorization) == 0:
		return erp.Grant{}, erp.Unauthorized()
	}
	scheme, token, found := strings.Cut(authorization[0], " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return erp.Grant{}, erp.Unauthorized()
	}
	g, ok := d.Verify(instance, strings.TrimSpace(token))
	if !ok {
		return erp.Grant{}, erp.Unauthorized()
	}
	if refused := g.Expired(c.o.Now()); refused != nil {
		return g, refused
	}
	return g, nil
}
