package gateway_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
)

// TestAReadOnlyTokenWritesNothing: nothing a read-only (or CLAVE-limited)
// token can send keeps or writes anything in the ERP's database: a batch's
// scope is checked before its fields, a batch with no write takes no key
// and runs in a read-only snapshot (a rollback would not undo a write in an
// autonomous transaction), as a single read runs read-only; and a kept
// answer has a bound, checked before the commit.
func TestAReadOnlyTokenWritesNothing(t *testing.T) {
	e, _, admin := keysEnv(t, true)
	fbtest.CreateList(t, fbtest.Demo(t))
	readOnly, _, err := e.acc.Mint("demo", erp.Limits{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	limited, _, err := e.acc.Mint("demo", erp.Limits{Claves: []string{"Get_Efecto", "Get_Lista"}})
	if err != nil {
		t.Fatal(err)
	}
	full, scope, err := e.acc.Mint("demo", erp.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	kept := func(key string) int {
		return count(t, admin, "SELECT COUNT(*) FROM GATEWAY_IDEMPOTENCY WHERE IDEM_KEY = ?", key)
	}
	code := newCode()
	efecto := `[{"CLAVE":"Get_Efecto","CODIGO":"` + code + `"}]`
	for _, c := range []struct {
		name, token, endpoint, body string
		headers                     []string
		status                      int
		contains                    string
	}{
		{"a write out of scope, its fields wrong too", readOnly, "execute", `[{"CLAVE":"Set_Terceros"}]`, nil, 403, `"cod_error":1107`},
		{"the second call out of scope", limited, "execute", `[{"CLAVE":"Get_Lista","N":"1"},{"CLAVE":"Set_Pago"}]`, nil, 403, `"index":1`},
		{"a batch of reads under a key", readOnly, "execute", efecto, []string{"Idempotency-Key", "ro-" + code}, 400, `"cod_error":1405`},
		{"a batch of reads under a key, a limited token", limited, "execute", efecto, []string{"Idempotency-Key", "lim-" + code}, 400, `"cod_error":1405`},
		{"a batch of reads on execute", readOnly, "execute", efecto, nil, 200, `read-only transaction`},
		{"a batch of reads on executequery", limited, "executequery", efecto, nil, 200, `read-only transaction`},
		{"two reads on executequery", limited, "executequery", `[{"CLAVE":"Get_Lista","N":"1"},` + efecto[1:], nil, 200, `read-only transaction`},
		{"one read", readOnly, "executequery", `{"CLAVE":"Get_Efecto","CODIGO":"` + code + `"}`, nil, 200, `read-only transaction`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := send(t, e.h, c.endpoint, c.body, append([]string{"Authorization", "Bearer " + c.token}, c.headers...)...)
			if r.status != c.status || !strings.Contains(r.body, c.contains) {
				t.Fatalf("%d %s, want %d with %s", r.status, r.body, c.status, c.contains)
			}
			if n := payments(t, admin, code); n != 0 {
				t.Fatalf("%d payments written", n)
			}
			if n := kept(code) + kept("ro-"+code) + kept("lim-"+code); n != 0 {
				t.Fatalf("%d answers kept", n)
			}
		})
	}
	// A keyed batch whose answer passes the bound a key keeps (1 MiB): a
	// 5,000-row read after a payment. Refused before the commit: nothing
	// is written, nothing kept.
	key := "big-" + code
	big := `[{"CLAVE":"Set_Pago","CODIGO":"` + code + `","VALOR":1},{"CLAVE":"Get_Lista","N":"5000"}]`
	r := send(t, e.h, "execute", big, "Authorization", "Bearer "+full, "Idempotency-Key", key)
	if r.status != 422 || !strings.Contains(r.body, `"cod_error":1302`) || !strings.Contains(r.body, "cannot be kept under an Idempotency-Key") {
		t.Fatalf("a keyed batch over the bound: %d %.400s", r.status, r.body)
	}
	if n := payments(t, admin, code); n != 0 {
		t.Fatalf("%d payments written", n)
	}
	if n := count(t, admin, "SELECT COUNT(*) FROM GATEWAY_IDEMPOTENCY WHERE SCOPE = ? AND IDEM_KEY = ?", scope, key); n != 0 {
		t.Fatalf("%d answers kept", n)
	}
	assertNoOpenWrites(t, admin)
}

// TestDryRunWhateverItsCase: a dry run asked in any case rolls back, tx=commit
// in any case commits, and any other value of tx is refused before anything
// runs: a client asking for a dry run never gets a commit.
func TestDryRunWhateverItsCase(t *testing.T) {
	e, token, admin := keysEnv(t, true)
	run := time.Now().UnixNano() % 1e9
	for i, c := range []struct {
		prefer string
		status int
		wrote  bool
	}{
		{"tx=rollback", 200, false},
		{"tx=ROLLBACK", 200, false},
		{"tx=Rollback", 200, false},
		{`tx="RollBack"; x=1`, 200, false},
		{"respond-async, TX=rollback", 200, false},
		{`return="a,tx=commit", tx=rollback`, 200, false},
		{`foo="x\",tx=commit", tx=rollback`, 200, false},
		{`foo="a;tx=commit"; tx=commit, tx=rollback`, 200, false},
		{`foo="x, tx=rollback`, 400, false},
		{`foo=x\", tx=rollback`, 400, false},
		{"tx=commit", 200, true},
		{"tx=COMMIT", 200, true},
		{"tx=rolback", 400, false},
		{"tx=", 400, false},
		{"tx=dry-run", 400, false},
		{"tx=rollback-please", 400, false},
	} {
		t.Run(c.prefer, func(t *testing.T) {
			code := fmt.Sprintf("D%d-%d", run, i)
			r := send(t, e.h, "execute", pago(code, 1), "Authorization", "Bearer "+token, "Prefer", c.prefer)
			if r.status != c.status {
				t.Fatalf("%d %s", r.status, r.body)
			}
			dry := c.status == 200 && !c.wrote
			if applied := r.header.Get("Preference-Applied") == "tx=rollback"; applied != dry {
				t.Errorf("Preference-Applied %q", r.header.Get("Preference-Applied"))
			}
			if c.status == http.StatusBadRequest && !strings.Contains(r.body, fmt.Sprintf(`"cod_error":%d`, erp.CodePreferInvalid)) {
				t.Errorf("refused with %s", r.body)
			}
			if n := payments(t, admin, code); n != map[bool]int{true: 1, false: 0}[c.wrote] {
				t.Fatalf("%d payments", n)
			}
		})
	}
}
