package gateway_test

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nakagami/firebirdsql"

	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// TestAReadOnlyDatabase: a database its DBA made read-only for maintenance
// (gfix -mode read_only) refuses every write with "attempted update on
// read-only database", which is no refusal of the call's (answered so, a
// client would not retry): a write, keyed or not, answers 503, 1201 "closed
// for maintenance", nothing written, with Retry-After; reads are served;
// once it is read-write again the same writes run, each once.
func TestAReadOnlyDatabase(t *testing.T) {
	cfg := fbtest.Demo(t)
	setupKeys(t, cfg)
	e := newEnv(t, gateway.Config{}, map[string]any{"demo": tenants.Instance{Connection: cfg, Idempotency: true}})
	token := fbtest.Token(t, e.acc, "demo")
	const read = `{"CLAVE":"Get_Terceros","CODIGO":"800000000"}`
	before := send(t, e.h, "executequery", read, "Authorization", "Bearer "+token)
	if w := postKeyed(t, e.h, token, "", pago(newCode(), 1)); before.status != http.StatusOK || w.status != http.StatusOK {
		t.Fatalf("warming up: %d %s; %+v", before.status, before.body, w)
	}

	admin := fbtest.Admin(t, cfg)
	mm, err := firebirdsql.NewMaintenanceManager(net.JoinHostPort(admin.Host, strconv.Itoa(admin.Port)), admin.User, admin.Password, firebirdsql.GetDefaultServiceManagerOptions())
	if err != nil {
		t.Fatal(err)
	}
	readOnly := false
	setMode := func(ro bool) {
		t.Helper()
		// Only an attachment of its own may change it: the DBA's way.
		if err := mm.ShutdownEx(admin.Database, firebirdsql.OperationModeSingle, firebirdsql.ShutdownModeExForce, 0); err != nil {
			t.Fatalf("shutting the database down: %v", err)
		}
		set := mm.SetAccessModeReadWrite
		if ro {
			set = mm.SetAccessModeReadOnly
		}
		err := set(admin.Database)
		if err := mm.OnlineEx(admin.Database, firebirdsql.OperationModeNormal); err != nil {
			t.Fatalf("bringing the database online: %v", err)
		}
		if err != nil {
			t.Fatalf("setting read-only %v: %v", ro, err)
		}
		readOnly = ro
	}
	t.Cleanup(func() {
		if readOnly {
			setMode(false)
		}
	})
	setMode(true)

	// A read first: it finds the connections the shutdown closed, and runs
	// again on new ones (a write that found one would have sent its commit
	// with its block, and answered 1204: TestAWriteAfterARestartRunsAgain).
	if r := send(t, e.h, "executequery", read, "Authorization", "Bearer "+token); r.status != http.StatusOK || r.body != before.body {
		t.Errorf("a read of a read-only database: %d %s", r.status, r.body)
	}
	code := newCode()
	for _, key := range []string{"", "ro-" + code} {
		start := time.Now()
		r := postKeyed(t, e.h, token, key, pago(code, 1))
		if r.status != http.StatusServiceUnavailable || !strings.Contains(r.body, `"cod_error":1201`) ||
			!strings.Contains(r.body, "is closed for maintenance (shut down or read-only) right now; nothing was written") || r.retry != "5" || time.Since(start) > 2*time.Second {
			t.Errorf("a write (key %q) to a read-only database, after %v: %+v", key, time.Since(start), r)
		}
	}

	setMode(false)
	check := fbtest.Open(t, admin)
	if n := payments(t, check, code); n != 0 {
		t.Fatalf("%d payments written while read-only", n)
	}
	if r := send(t, e.h, "executequery", read, "Authorization", "Bearer "+token); r.status != http.StatusOK {
		t.Fatalf("a read once read-write again: %d %s", r.status, r.body)
	}
	for _, key := range []string{"", "ro-" + code} {
		if r := postKeyed(t, e.h, token, key, pago(code, 1)); r.status != http.StatusOK {
			t.Fatalf("a write (key %q) once read-write again: %+v", key, r)
		}
	}
	if n := payments(t, check, code); n != 2 {
		t.Fatalf("%d payments written, want 2", n)
	}
}
