package thirdparty

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
)

// TestAValueAllocatesItsBufferOnly holds patch 0011 against Firebird: a row
// is read a value at a time, and on an encrypted connection (the gateway's
// default, which the test server requires) with the trace off each value
// read allocates its buffer and nothing else. The driver as released
// allocated two more for each: the trace's arguments, boxed though the
// trace was off, and a copy of the encrypted bytes to decrypt from.
func TestAValueAllocatesItsBufferOnly(t *testing.T) {
	t.Setenv("FB_DEBUG", "")
	ctx := context.Background()
	cfg := fbtest.Demo(t)
	cfg.WireCrypt = erp.WireCryptRequired
	db, _ := countedDBOf(t, cfg, "")
	// allocs is what a read of one row of n small integers
	// allocates, its statement prepared once.
	allocs := func(n int) float64 {
		cols := make([]string, n)
		for i := range cols {
			cols[i] = fmt.Sprintf("%d AS C%d", i%100, i)
		}
		st, err := db.PrepareContext(ctx, "SELECT "+strings.Join(cols, ", ")+" FROM RDB$DATABASE")
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		dest := make([]any, n)
		for i := range dest {
			dest[i] = new(any)
		}
		read := func() {
			if err := st.QueryRowContext(ctx).Scan(dest...); err != nil {
				t.Fatal(err)
			}
		}
		read()
		return testing.AllocsPerRun(50, read)
	}
	const narrow, wide = 1, 65
	perValue := (allocs(wide) - allocs(narrow)) / (wide - narrow)
	t.Logf("allocations a value: %.2f", perValue)
	if perValue > 1.5 {
		t.Errorf("a value read allocates %.2f times, want its buffer only (1)", perValue)
	}
}

// TestTheTraceWhenAsked: a connection dialed while FB_DEBUG is set still
// traces its packets (patch 0011 reads the variable once, at the dial).
func TestTheTraceWhenAsked(t *testing.T) {
	t.Setenv("FB_DEBUG", "1")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	// A setup that fails the test must not leave the tests after it
	// writing into the pipe.
	t.Cleanup(func() { os.Stderr = stderr })
	traced := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		traced <- b
	}()
	db, _ := countedDB(t, "")
	var one int
	err = db.QueryRowContext(context.Background(), "SELECT 1 FROM RDB$DATABASE").Scan(&one)
	db.Close()
	os.Stderr = stderr
	w.Close()
	trace := <-traced
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[fb-debug] opPrepareStatement():", "[fb-debug] \trecvPackets():"} {
		if !bytes.Contains(trace, []byte(want)) {
			t.Errorf("the trace has no %q; it is:\n%s", want, trace)
		}
	}
}
