package gateway

import (
	"fmt"
	"testing"
	"time"
)

// TestBreakerStates walks one instance's breaker through its states on a
// clock the test moves.
func TestBreakerStates(t *testing.T) {
	now := time.Unix(0, 0)
	bs := newBreakers(BreakerConfig{Failures: 3, CoolDown: time.Second})
	bs.now = func() time.Time { return now }
	allow := func() (ticket, bool) {
		tk, ok, _ := bs.allow("a")
		return tk, ok
	}

	// Fast refusals (a server restarting) never open it, however many.
	for range 10 {
		tk, ok := allow()
		if !ok || bs.done("a", tk, refused) {
			t.Fatal("a fast refusal counted")
		}
	}
	// Five calls start together and all hang: the third opens the
	// breaker; the two after it count for nothing.
	var started []ticket
	for range 5 {
		tk, ok := allow()
		if !ok {
			t.Fatal("refused while closed")
		}
		started = append(started, tk)
	}
	for i, tk := range started {
		if opened := bs.done("a", tk, hung); opened != (i == 2) {
			t.Fatalf("call %d: opened %v", i, opened)
		}
	}
	if _, ok := allow(); ok {
		t.Fatal("allowed while open")
	}
	// Past the longest cool-down (1 s + 25 %): one probe, the others are
	// refused.
	for _, failed := range []verdict{hung, refused} {
		now = now.Add(1250 * time.Millisecond)
		probe, ok := allow()
		if !ok || !probe.probe {
			t.Fatal("no probe after the cool-down")
		}
		if _, ok := allow(); ok {
			t.Fatal("a second call beside the probe")
		}
		// The probe fails: open again for the same cool-down, which
		// never grows (a probe costs little; growing it would make the
		// outage longer than the database's).
		bs.done("a", probe, failed)
		if _, ok := allow(); ok {
			t.Fatal("allowed after a failed probe")
		}
	}
	now = now.Add(1250 * time.Millisecond)
	probe, ok := allow()
	if !ok {
		t.Fatal("no probe after the cool-down")
	}
	bs.done("a", probe, answered)
	if _, ok := allow(); !ok || len(bs.m) != 0 {
		t.Fatal("a good probe did not close and forget the breaker")
	}
}

func TestBreakersAreBounded(t *testing.T) {
	bs := newBreakers(BreakerConfig{MaxInstances: 100})
	for i := range 1000 {
		name := fmt.Sprint("i", i)
		tk, _, _ := bs.allow(name)
		bs.done(name, tk, hung)
	}
	if len(bs.m) > 100 {
		t.Fatalf("%d breakers held, bound 100", len(bs.m))
	}
}
