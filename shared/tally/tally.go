// Package tally counts, per request, the work the request caused in systems
// it shares with everyone else: secrets read, database connections opened,
// statements prepared, round trips to the database, orphans cancelled. The packages doing that work add to the count carried
// by the request's context; the gateway reports it with the request's
// metrics. A context without a count (background work) counts nothing.
package tally

import (
	"context"
	"sync/atomic"
)

// Kind is one kind of work counted.
type Kind int

// The kinds counted.
const (
	SecretFetches     Kind = iota // secrets read from the secret store
	ConnectionOpens               // database attachments made
	StatementPrepares             // statements the database was asked to prepare
	RoundTrips                    // exchanges with the database the request waited on
	OrphansCancelled              // attachments of ours a cut link left behind, cancelled
	kinds
)

// Counts is one request's count. Work a request started may finish after
// the request (a shared secret fetch), so Counts is safe for concurrent use.
type Counts struct {
	n [kinds]atomic.Int64
}

type key struct{}

// With returns ctx carrying c, so work done under ctx is counted in c.
func With(ctx context.Context, c *Counts) context.Context {
	return context.WithValue(ctx, key{}, c)
}

// Add counts one piece of work of kind k in ctx's count, if it has one.
func Add(ctx context.Context, k Kind) { AddN(ctx, k, 1) }

// AddN counts n pieces of work of kind k in ctx's count, if it has one.
func AddN(ctx context.Context, k Kind, n int64) {
	if c, ok := ctx.Value(key{}).(*Counts); ok {
		c.n[k].Add(n)
	}
}

// Get returns how much work of kind k has been counted.
func (c *Counts) Get(k Kind) int64 {
	return c.n[k].Load()
}
