package access

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"
)

// Load reads the access document's bytes from where it lives.
type Load func(ctx context.Context) ([]byte, error)

// Current holds the access document of one execution environment, read at
// start-up and read again in the background once it is older than every, so
// a key added for a rotation reaches running environments without a deploy.
// A failed re-read keeps the document it has. Current is safe for concurrent
// use.
type Current struct {
	load        Load
	every       time.Duration
	log         *slog.Logger
	doc         atomic.Pointer[Document]
	loaded      atomic.Int64 // unix nanoseconds of the last attempt
	refreshing  atomic.Bool
	loadTimeout time.Duration
}

// Start reads the document once; it fails when that first read fails. every
// <= 0 never reads it again (a local file).
func Start(ctx context.Context, load Load, every time.Duration, log *slog.Logger) (*Current, error) {
	c := &Current{load: load, every: every, log: log, loadTimeout: 5 * time.Second}
	doc, err := c.read(ctx)
	if err != nil {
		return nil, err
	}
	c.doc.Store(doc)
	c.loaded.Store(time.Now().UnixNano())
	return c, nil
}

// Static holds doc for good: tests and tools.
func Static(doc *Document) *Current {
	c := &Current{}
	c.doc.Store(doc)
	return c
}

func (c *Current) read(ctx context.Context) (*Document, error) {
	data, err := c.load(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the access document: %w", err)
	}
	return Parse(data)
}

// Document returns the document in force, and starts a re-read when it is
// due. A re-read is started by time only, never by what a request carries:
// strangers cannot make it happen more often.
func (c *Current) Document() *Document {
	if c.every > 0 && time.Since(time.Unix(0, c.loaded.Load())) > c.every && c.refreshing.CompareAndSwap(false, true) {
		c.loaded.Store(time.Now().UnixNano())
		go func() {
			defer c.refreshing.Store(false)
			ctx, cancel := context.WithTimeout(context.Background(), c.loadTimeout)
			defer cancel()
			doc, err := c.read(ctx)
			if err != nil {
				c.log.Warn("keeping the access document in force", "err", err)
				return
			}
			c.doc.Store(doc)
		}()
	}
	return c.doc.Load()
}

// Authorize checks a request's Authorization header values for instance.
// It returns the token's id ("" for an anonymous instance) or false. Several
// Authorization headers are refused: proxies and API Gateway disagree on
// which one counts.
func (c *Current) Authorize(instance string, authorization []string) (tokenID string, ok bool) {
	d := c.Document()
	switch {
	case len(authorization) > 1:
		return "", false
	case d.Anonymous(instance):
		return "", true
	case len(authorization) == 0:
		return "", false
	}
	scheme, token, found := strings.Cut(authorization[0], " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return d.Verify(instance, strings.TrimSpace(token))
}
