package gateway

import (
	"cmp"
	"math/rand/v2"
	"sync"
	"time"
)

// BreakerConfig tunes the per-instance circuit breaker; zero values take the
// defaults.
type BreakerConfig struct {
	// Failures is how many calls in a row that cost their time (a
	// deadline spent, a connect that hung) open an instance's breaker (3).
	// A fast refusal (connection refused or reset, a server still
	// starting) costs nothing to try again, and never counts.
	Failures int
	// CoolDown is how long an open breaker refuses before a probe
	// (500ms); each cool-down is drawn from ±25 % around it, so
	// environments do not probe in step. It does not grow: a probe of a
	// silent database costs its caller about ProbeSilence, and a database
	// that answers again is served again within a cool-down.
	CoolDown time.Duration
	// ProbeSilence fails a probe (a round trip on a connection of the
	// instance's pool, and its connect when the pool has none alive) once
	// the database has not spoken for that long (1s). It bounds silence,
	// not the probe: over a slow link a connect's round trips add up past
	// it while the database answers each. A call that runs out of time
	// counts toward opening only when the database was silent for as long
	// (or a quarter of the call's time, when shorter) before it did.
	ProbeSilence time.Duration
	// MaxInstances bounds the failing instances tracked (10,000); a success
	// forgets an instance.
	MaxInstances int
}

// Defaults of BreakerConfig.
const (
	DefaultFailures     = 3
	DefaultCoolDown     = 500 * time.Millisecond
	DefaultProbeSilence = time.Second
	DefaultMaxInstances = 10_000
)

// breakers keep, per instance, whether its database has been hanging, so a
// customer whose Firebird hangs costs each environment a few deadlines and
// not every request it serves, and never make an outage longer than the
// database's own. Safe for concurrent use.
type breakers struct {
	cfg BreakerConfig
	now func() time.Time
	mu  sync.Mutex
	m   map[string]*breaker
}

type breaker struct {
	failures  int       // slow failures in a row
	openUntil time.Time // refuse until then (zero: closed)
	probing   bool      // one call is testing the database
	gen       int       // times opened; calls started before the last opening do not count
}

// ticket is what a call allowed through carries back to done.
type ticket struct {
	gen   int
	probe bool // the call must probe the database first
}

// verdict is how a call went, as the breaker sees it.
type verdict int

const (
	answered verdict = iota // the database answered: closes the breaker
	refused                 // failed fast, or was cancelled: counts for nothing, except as a probe
	hung                    // failed after costing its time
)

func newBreakers(cfg BreakerConfig) *breakers {
	cfg.Failures = cmp.Or(cfg.Failures, DefaultFailures)
	cfg.CoolDown = cmp.Or(cfg.CoolDown, DefaultCoolDown)
	cfg.ProbeSilence = cmp.Or(cfg.ProbeSilence, DefaultProbeSilence)
	cfg.MaxInstances = cmp.Or(cfg.MaxInstances, DefaultMaxInstances)
	return &breakers{cfg: cfg, now: time.Now, m: make(map[string]*breaker)}
}

// allow reports whether a call to instance may go to its database now; when
// not, how long until it may be tried again. A call allowed must hand its
// ticket to done; a probe's ticket, first the probe's verdict.
func (bs *breakers) allow(instance string) (t ticket, ok bool, retryAfter time.Duration) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b := bs.m[instance]
	if b == nil {
		return ticket{}, true, 0
	}
	if b.openUntil.IsZero() {
		return ticket{gen: b.gen}, true, 0
	}
	now := bs.now()
	if now.Before(b.openUntil) {
		return ticket{}, false, b.openUntil.Sub(now)
	}
	if b.probing {
		// One probe at a time; the others are refused until its verdict.
		return ticket{}, false, bs.cfg.CoolDown
	}
	b.probing = true
	return ticket{gen: b.gen, probe: true}, true, 0
}

// done records the verdict of a call allow let through, and reports whether
// it opened the breaker.
func (bs *breakers) done(instance string, t ticket, v verdict) (opened bool) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b := bs.m[instance]
	switch {
	case v == answered:
		if b != nil {
			delete(bs.m, instance) // healthy again: nothing to remember
		}
		return false
	case v == refused && !t.probe:
		return false
	}
	if b == nil {
		if len(bs.m) >= bs.cfg.MaxInstances {
			bs.evict()
		}
		b = &breaker{}
		bs.m[instance] = b
	}
	if t.gen != b.gen {
		// Started before the breaker last opened: its failure is already
		// accounted for by the run that opened it.
		return false
	}
	if !t.probe {
		b.failures++
		if b.failures < bs.cfg.Failures || !b.openUntil.IsZero() {
			return false
		}
	}
	b.probing, b.failures = false, 0
	b.gen++
	cool := bs.cfg.CoolDown
	jitter := time.Duration(rand.Int64N(int64(cool)/2+1)) - cool/4
	b.openUntil = bs.now().Add(cool + jitter)
	return !t.probe
}

// evict forgets a breaker that is not open; failing that, any. bs.mu is held.
func (bs *breakers) evict() {
	now := bs.now()
	for name, b := range bs.m {
		if !b.probing && now.After(b.openUntil) {
			delete(bs.m, name)
			return
		}
	}
	for name := range bs.m {
		delete(bs.m, name)
		return
	}
}

// speakingWithin is the silence before a call's bound of limit ran out
// under which the call does not count: its database was still speaking.
// A quarter of a short bound at most, so that a frozen database that
// spoke once (a connect's first answer) still counts.
func (b *breakers) speakingWithin(limit time.Duration) time.Duration {
	return min(b.cfg.ProbeSilence, limit/4)
}
