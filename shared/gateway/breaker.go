package gateway

import (
	"math/rand/v2"
	"sync"
	"time"
)

// BreakerConfig tunes the per-instance circuit breaker; zero values take the
// defaults.
type BreakerConfig struct {
	// Failures is how many "unavailable" outcomes in a row open an
	// instance's breaker (3).
	Failures int
	// CoolDown is how long an open breaker refuses before one probe goes
	// through (10s); each cool-down is drawn from ±25 % around it, so
	// environments do not probe in step, and doubles while probes fail, up
	// to 8 times the base.
	CoolDown time.Duration
	// MaxInstances bounds the failing instances tracked (10,000); a success
	// forgets an instance.
	MaxInstances int
}

// breakers keep, per instance, whether its database has been failing, so a
// customer whose Firebird hangs costs each environment a few timeouts and
// not every request it serves. Safe for concurrent use.
type breakers struct {
	cfg BreakerConfig
	now func() time.Time
	mu  sync.Mutex
	m   map[string]*breaker
}

type breaker struct {
	failures  int       // unavailable outcomes in a row
	openUntil time.Time // refuse until then (zero: closed)
	opens     int       // cool-downs in a row, for the back-off
	probing   bool      // one call is testing the database
	gen       int       // times opened; calls started before the last opening do not count
}

// ticket is what a call allowed through carries back to done.
type ticket struct {
	gen   int
	probe bool
}

func newBreakers(cfg BreakerConfig) *breakers {
	if cfg.Failures <= 0 {
		cfg.Failures = 3
	}
	if cfg.CoolDown <= 0 {
		cfg.CoolDown = 10 * time.Second
	}
	if cfg.MaxInstances <= 0 {
		cfg.MaxInstances = 10_000
	}
	return &breakers{cfg: cfg, now: time.Now, m: make(map[string]*breaker)}
}

// allow reports whether a call to instance may go to its database now; when
// not, how long until it may be tried again. A call allowed must hand its
// ticket to done.
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
		// One probe at a time; the others wait for its verdict.
		return ticket{}, false, bs.cfg.CoolDown / 4
	}
	b.probing = true
	return ticket{gen: b.gen, probe: true}, true, 0
}

// done records the outcome of a call allow let through, and reports whether
// it opened the breaker.
func (bs *breakers) done(instance string, t ticket, unavailable bool) (opened bool) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b := bs.m[instance]
	if !unavailable {
		if b != nil {
			delete(bs.m, instance) // healthy again: nothing to remember
		}
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
	b.opens = min(b.opens+1, 4)
	cool := bs.cfg.CoolDown << (b.opens - 1)
	jitter := time.Duration(rand.Int64N(int64(cool)/2+1)) - cool/4
	b.openUntil = bs.now().Add(cool + jitter)
	return true
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
