package tally_test

import (
	"context"
	"sync"
	"testing"

	"github.com/erp-gateway/gateway/shared/tally"
)

func TestAddCountsOnlyInTheContextsCount(t *testing.T) {
	var c tally.Counts
	ctx := tally.With(context.Background(), &c)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			tally.Add(ctx, tally.StatementPrepares)
			tally.Add(context.Background(), tally.StatementPrepares) // counted nowhere
		})
	}
	tally.Add(ctx, tally.SecretFetches)
	wg.Wait()
	for _, tc := range []struct {
		kind tally.Kind
		want int64
	}{{tally.SecretFetches, 1}, {tally.ConnectionOpens, 0}, {tally.StatementPrepares, 50}} {
		if got := c.Get(tc.kind); got != tc.want {
			t.Errorf("kind %d: got %d, want %d", tc.kind, got, tc.want)
		}
	}
}
