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

	// Five calls start together and all fail: the third opens the
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
		if opened := bs.done("a", tk, true); opened != (i == 2) {
			t.Fatalf("call %d: opened %v", i, opened)
		}
	}
	if _, ok := allow(); ok {
		t.Fatal("allowed while open")
	}
	// Past the longest cool-down (1 s + 25 %): one probe, the others wait.
	now = now.Add(1250 * time.Millisecond)
	probe, ok := allow()
	if !ok || !probe.probe {
		t.Fatal("no probe after the cool-down")
	}
	if _, ok := allow(); ok {
		t.Fatal("a second call beside the probe")
	}
	// The probe fails: open again for 2 s ± 25 %.
	if !bs.done("a", probe, true) {
		t.Fatal("a failed probe did not open the breaker")
	}
	now = now.Add(1400 * time.Millisecond)
	if _, ok := allow(); ok {
		t.Fatal("the cool-down did not double")
	}
	now = now.Add(1200 * time.Millisecond)
	probe, ok = allow()
	if !ok {
		t.Fatal("no probe after the doubled cool-down")
	}
	bs.done("a", probe, false)
	if _, ok := allow(); !ok || len(bs.m) != 0 {
		t.Fatal("a good probe did not close and forget the breaker")
	}
}

func TestBreakersAreBounded(t *testing.T) {
	bs := newBreakers(BreakerConfig{MaxInstances: 100})
	for i := range 1000 {
		name := fmt.Sprint("i", i)
		tk, _, _ := bs.allow(name)
		bs.done(name, tk, true)
	}
	if len(bs.m) > 100 {
		t.Fatalf("%d breakers held, bound 100", len(bs.m))
	}
}
