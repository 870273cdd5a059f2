package firebird

import (
	"context"
	"errors"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nakagami/firebirdsql"

	"github.com/erp-gateway/gateway/shared/erp"
)

// TestMarker: the marker is what huntSQL reads (its pattern, and the bound
// at the 26th character), within the 255 bytes the server keeps.
func TestMarker(t *testing.T) {
	pattern := regexp.MustCompile(`^erp-gateway orphan-after=[0-9]{1,6} conn=[0-9a-f]{16}$`)
	for _, c := range []struct {
		bound time.Duration
		want  string
	}{
		{9 * time.Second, "9"},
		{27*time.Second + time.Millisecond, "28"}, // never less than the bound
		{DefaultLongestCall + orphanMargin, "65"},
	} {
		m := marker(c.bound, newConnID())
		if !pattern.MatchString(m) || len(m) > 255 || m[25:25+len(c.want)] != c.want {
			t.Errorf("marker(%s) = %q", c.bound, m)
		}
	}
	dsn, err := url.Parse(attachDSN(erp.Connection{Host: "h", Database: "/d.fdb", User: "u", Password: "p"}, 9*time.Second, "0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	if q := dsn.Query(); q.Get("client_version") != "erp-gateway orphan-after=9 conn=0123456789abcdef" || q.Get("lock_timeout") != "2" {
		t.Fatalf("attachDSN: %s", dsn)
	}
}

// TestLockWaitsAreToldFromRefusals: a conflict counts as a lock given up on
// only when it came after the lock timeout could have ended a wait, and
// then it is no refusal of the database's.
func TestLockWaitsAreToldFromRefusals(t *testing.T) {
	conflict := func(code int) error { return &firebirdsql.FbError{GDSCodes: []int{code}, Message: "conflict"} }
	exception := &firebirdsql.FbError{GDSCodes: []int{firebirdsql.ISCExcept}, Params: [][]string{{"1"}}}
	for _, c := range []struct {
		name   string
		err    error
		took   time.Duration
		waited bool
	}{
		{"a duplicate, at once", conflict(firebirdsql.ISCUniqueKeyViolation), 3 * time.Millisecond, false},
		{"a duplicate, after the lock timeout", conflict(firebirdsql.ISCUniqueKeyViolation), 1500 * time.Millisecond, true},
		{"an update conflict, after the lock timeout", conflict(firebirdsql.ISCDeadlock), 1900 * time.Millisecond, true},
		{"a lock conflict (NO WAIT), at once", conflict(firebirdsql.ISCLockConflict), time.Millisecond, false},
		{"a user exception, however late", exception, 5 * time.Second, false},
		{"a lost connection, however late", errors.New("EOF"), 5 * time.Second, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := waited(c.err, c.took)
			if lockWaited(err) != c.waited {
				t.Fatalf("lockWaited = %v", !c.waited)
			}
			var exc *erp.Exception
			refused := errors.As(classify(context.Background(), executing, err), &exc)
			locked := errors.Is(classify(context.Background(), executing, err), erp.ErrLocked)
			if c.waited && (refused || !locked) || !c.waited && locked {
				t.Fatalf("refused %v, ErrLocked %v", refused, locked)
			}
		})
	}
}

// TestAbandonedIdsStayBounded: the ids a hunt took back when it could not
// run (a database that does not answer), with those abandoned meanwhile,
// are bounded as new ones are, so the next hunt's parameter holds them.
func TestAbandonedIdsStayBounded(t *testing.T) {
	p := NewPools(Options{})
	defer p.Close()
	out := erp.Target{Instance: "x", Connection: erp.Connection{Host: "127.0.0.1", Port: hang(t), Database: "/x.fdb", User: "u", Password: "p"}}
	for range abandonedMax {
		p.abandon(out.Instance, newConnID())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	hunted := make(chan struct{})
	go func() { defer close(hunted); p.Hunt(ctx, out) }()
	h := p.hunting(out.Instance)
	// Until the hunt took them; or it ran and gave them back before this
	// looked (a hunt started late, after its context ended), which the
	// bound below holds all the same.
	for taken := false; !taken; time.Sleep(time.Millisecond) {
		h.mu.Lock()
		taken = len(h.abandoned) == 0
		h.mu.Unlock()
		select {
		case <-hunted:
			taken = true
		default:
		}
	}
	for range abandonedMax {
		p.abandon(out.Instance, newConnID())
	}
	<-hunted
	h.mu.Lock()
	defer h.mu.Unlock()
	if n, text := len(h.abandoned), strings.Join(h.abandoned, " "); n != abandonedMax || len(text) > 2000 {
		t.Fatalf("%d ids, %d characters; the hunt's parameter holds 2000", n, len(text))
	}
}
