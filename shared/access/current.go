package access

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/erp-gateway/gateway/shared/cache"
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
	// RefuseDemoKey: a document holding DemoKey refuses every token
	// (erp.CodeAccessDemoKey), as a deployed one must never hold it.
	RefuseDemoKey bool
}

// Defaults of Options.
const (
	DefaultEvery   = 5 * time.Minute
	DefaultMaxAge  = time.Hour
	DefaultRetry   = 5 * time.Second
	DefaultTimeout = 3 * time.Second
	DefaultWait    = time.Second
)

// Current holds the access document of one execution environment, read at
// start-up and again once it is older than Options.Every, so a key added for
// a rotation reaches running environments without a deploy. A read that
// fails keeps the document in force until Options.MaxAge; a read that finds
// a malformed document refuses every token at once, as a new environment
// that reads it does (infra/docs/configuration.md#tokens). Current is safe for concurrent use.
type Current struct {
	load Load
	o    Options
	log  *slog.Logger
	// docs holds a document read again; nil, doc is held for good.
	docs *cache.Cache[struct{}, *Document]
	doc  *Document
	// verified remembers the grants of tokens whose signature held, for
	// the document that verified them.
	verified verified
}

// verified remembers what verifying a signature (about 55 µs of CPU,
// infra/docs/configuration.md#tokens) found, for one document: an integrator's next requests
// with its token cost a map lookup. Only tokens that verified are kept, so
// strangers add nothing; a new document (a key removed) starts afresh, and
// at maxVerified tokens it is emptied rather than ranked.
type verified struct {
	mu     sync.Mutex
	doc    *Document
	grants map[string]erp.Grant
}

const maxVerified = 1024

// verify is d.Verify, remembered for d when the token verified.
func (c *Current) verify(d *Document, instance, token string) (erp.Grant, error) {
	if g, known := c.verified.get(d, instance, token); known {
		return g, nil
	}
	g, err := d.Verify(instance, token)
	if err == nil {
		c.verified.put(d, instance, token, g)
	}
	return g, err
}

func (v *verified) get(d *Document, instance, token string) (erp.Grant, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	g, ok := v.grants[instance+"\n"+token]
	return g, ok && v.doc == d
}

func (v *verified) put(d *Document, instance, token string, g erp.Grant) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.doc != d || len(v.grants) >= maxVerified {
		v.doc, v.grants = d, make(map[string]erp.Grant)
	}
	v.grants[instance+"\n"+token] = g
}

// errUnread marks a read that failed, which leaves the document in force
// (up to MaxAge), unlike one that found it malformed.
var errUnread = errors.New("reading the access document")

// errDemoKey: the document holds the published demo key (RefuseDemoKey).
var errDemoKey = errors.New("the access document holds the published demo key")

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
	if o.Every <= 0 {
		ctx, cancel := context.WithTimeout(ctx, o.Timeout)
		defer cancel()
		doc, err := c.read(ctx)
		if err != nil {
			return nil, err
		}
		c.doc = doc
		return c, nil
	}
	every := min(o.Every, o.MaxAge)
	c.docs = cache.New[struct{}, *Document](cache.Options{
		TTL:      every,
		StaleFor: o.MaxAge - every,
		// A failed read is tried again at the next Every while the document
		// is in force; once it is not, Document asks for one per Retry.
		NegativeTTL: every,
		Keep:        func(err error) bool { return errors.Is(err, errUnread) },
		// Requests never wait for a read while the document is in force.
		Background: true,
		MinRefresh: o.Retry,
		Timeout:    o.Timeout,
		Now:        o.Now,
	})
	c.docs.Get(ctx, struct{}{}, c.read) //nolint:errcheck // logged by read; Document says the rest
	return c, nil
}

// Static holds doc for good: for other packages' tests, which serve a
// document they made without reading it from anywhere.
func Static(doc *Document) *Current {
	return &Current{o: Options{Now: time.Now}, doc: doc}
}

// read reads the document.
func (c *Current) read(ctx context.Context) (*Document, error) {
	data, err := c.load(ctx)
	if err != nil {
		err = fmt.Errorf("%w: %w", errUnread, err)
		c.log.Warn("the access document could not be read: tokens are refused once the last good read is older than max_age", "err", err, "max_age", c.o.MaxAge)
		return nil, err
	}
	doc, err := Parse(data)
	if err != nil {
		c.log.Error("the access document is malformed: tokens are refused until it is mended", "err", err)
		return nil, err
	}
	if c.o.RefuseDemoKey && doc.HoldsDemoKey() {
		c.log.Error("the access document holds the published demo key: every token is refused until it is replaced (make token-key)")
		return nil, errDemoKey
	}
	return doc, nil
}

// Document returns the document in force. A read is started by time only,
// never by what a request carries, so strangers cannot make it happen more
// often: in the background while the document may be trusted; while it may
// not, ctx waits for a read (at most one per Options.Retry), up to
// Options.Wait.
func (c *Current) Document(ctx context.Context) (*Document, error) {
	if c.docs == nil {
		return c.doc, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.o.Wait)
	defer cancel()
	doc, err := c.docs.Get(ctx, struct{}{}, c.read)
	if err != nil {
		doc, err = c.docs.Refresh(ctx, struct{}{}, c.read)
	}
	return doc, err
}

// Authorize checks a request's Authorization header values for instance and
// returns what they grant, or the refusal: erp.Unauthorized for anything
// wrong with the credentials, erp.CodeTokenExpired for a genuine token past
// its expiry, erp.CodeAccessStale when no document can be trusted. Several
// Authorization headers are refused: proxies and API Gateway disagree on
// which one counts.
func (c *Current) Authorize(ctx context.Context, instance string, authorization []string) (erp.Grant, *erp.Error) {
	d, err := c.Document(ctx)
	if errors.Is(err, errDemoKey) {
		return erp.Grant{}, erp.Refuse(erp.CodeAccessDemoKey, "this deployment's access document holds the published demo key, which anyone can mint with: every token is refused until its operator replaces the key (make token-key)")
	}
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
	g, err := c.verify(d, instance, strings.TrimSpace(token))
	if errors.Is(err, ErrRetired) {
		// Said whatever the instance: the kind of a token tells nothing of
		// which instances exist.
		refused := erp.Unauthorized()
		refused.Message = "this token is of a kind this gateway no longer accepts (signed with a shared key): ask the instance's operator for a new one"
		return erp.Grant{}, refused
	}
	if err != nil {
		return erp.Grant{}, erp.Unauthorized()
	}
	if refused := g.Expired(c.o.Now()); refused != nil {
		return g, refused
	}
	return g, nil
}
