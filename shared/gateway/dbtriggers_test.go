package gateway_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// TestACommitTheDatabaseRefuses: a database trigger ON TRANSACTION COMMIT
// that refuses a transaction (an ERP checking a document as a whole) is
// the database's refusal, answered as a refused call is, whichever way the
// commit went: after a write's answer, its rows', a document's block,
// calls run one by one, a key's keeping.
// Nothing is written, nothing kept under a key, and the connection serves
// on.
func TestACommitTheDatabaseRefuses(t *testing.T) {
	cfg := fbtest.Demo(t)
	admin := setupKeys(t, cfg)
	commitTrigger(t, admin, "TEST_VETO", "TEST_PAGOS", "VETO", "EXCEPTION REST_ERROR 'EL DOCUMENTO NO CUADRA'")
	// Database triggers load with an attachment: the gateway's come after.
	e := newEnv(t, gateway.Config{}, map[string]any{"demo": tenants.Instance{Connection: cfg, Idempotency: true}})
	token := fbtest.Token(t, e.acc, "demo")
	const refused = `{"cod_error":0,"ex_execsql":"[firebirdsql]exception 16\r\nREST_ERROR\r\nEL DOCUMENTO NO CUADRA\r\nAt trigger 'TEST_VETO' line: 2, col: 69"}`
	rolledBack := func(last int) string {
		return fmt.Sprintf(`{"cod_error":1501,"ex_execsql":"the database refused the batch's commit (call %d's element says why): this call ran and was rolled back; nothing of the batch was written"}`, last)
	}
	ref := `{"$from":0,"$field":"CODIGO"}`
	tests := []struct {
		name string
		body string // %[1]q the code
		key  bool
		want string
	}{
		{"a write", pago("%[1]s", 1), false, refused},
		{"a write of many rows", `{"CLAVE":"Set_Tres","CODIGO":%[1]q}`, false, refused},
		{"a keyed write", pago("%[1]s", 1), true, refused},
		{"a document", `[` + pago("%[1]s", 1) + `,{"CLAVE":"Set_Pago","CODIGO":` + ref + `,"VALOR":2}]`, false, `[` + rolledBack(1) + `,` + refused + `]`},
		{"a keyed document", `[` + pago("%[1]s", 1) + `,{"CLAVE":"Set_Pago","CODIGO":` + ref + `,"VALOR":2}]`, true, `[` + rolledBack(1) + `,` + refused + `]`},
		{"a batch run call by call", `[` + pago("%[1]s", 1) + `,{"CLAVE":"Get_Referencias","CODIGO":"REF0001"},` + pago("%[1]s", 3) + `]`, false,
			`[` + rolledBack(2) + `,` + rolledBack(2) + `,` + refused + `]`},
		{"a keyed batch run call by call", `[` + pago("%[1]s", 1) + `,{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}]`, true, `[` + rolledBack(1) + `,` + refused + `]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code := "VETO" + newCode()[:12]
			body := fmt.Sprintf(tt.body, code)
			key := ""
			if tt.key {
				key = "veto-" + code
			}
			// Twice: a refused commit keeps nothing under the key, so the
			// second runs again, and answers alike.
			for i := range 2 {
				got := postKeyed(t, e.h, token, key, body)
				if got.status != http.StatusOK || got.body != tt.want || got.replayed != "" {
					t.Fatalf("try %d: %d %s (replayed %q), want 200 %s", i, got.status, got.body, got.replayed, tt.want)
				}
			}
			if n := payments(t, admin, code); n != 0 {
				t.Fatalf("%d payments of %s written", n, code)
			}
			if key != "" && count(t, admin, `SELECT COUNT(*) FROM GATEWAY_IDEMPOTENCY WHERE IDEM_KEY = ?`, key) != 0 {
				t.Fatalf("key %s kept", key)
			}
		})
	}
	if n := fbtest.OpenWrites(t, admin); n != 0 {
		t.Errorf("%d write transactions left open", n)
	}
	// The connection serves on.
	code := "OK" + newCode()[:12]
	if got := postKeyed(t, e.h, token, "", pago(code, 1)); got.status != http.StatusOK || !strings.Contains(got.body, `"data"`) || payments(t, admin, code) != 1 {
		t.Fatalf("after: %d %s", got.status, got.body)
	}
}

// TestACommitThatWaitsForALock: a commit trigger's write that gives up
// waiting for a row an ERP user holds is a lock, as a statement's is
// (503, 1201, Retry-After), for a write and a batch; nothing is written.
func TestACommitThatWaitsForALock(t *testing.T) {
	cfg := fbtest.Demo(t)
	admin := setupKeys(t, cfg)
	commitTrigger(t, admin, "TEST_CANDADO_COMMIT", "TEST_PAGOS", "LOCK", "UPDATE TEST_CANDADO SET N = N + 1 WHERE ID = 1", "UPDATE ON TEST_CANDADO")
	e := newEnv(t, gateway.Config{Timeout: 8 * time.Second}, map[string]any{"demo": anonymous(cfg)})
	holder := holdCandado(t, admin)
	var codes []string
	for _, body := range []string{
		pago("%[1]s", 1),
		`[` + pago("%[1]s", 1) + `,` + pago("%[1]s", 2) + `]`,
	} {
		code := "LOCK" + newCode()[:12]
		codes = append(codes, code)
		r := e.post(t, path("demo", "execute"), fmt.Sprintf(body, code))
		if r.Status != http.StatusServiceUnavailable || *r.Body.CodError != int(erp.CodeUnavailable) || !strings.Contains(*r.Body.ExExecSQL, "locked") ||
			!strings.Contains(*r.Body.ExExecSQL, "was written") || r.Header.Get("Retry-After") != "1" {
			t.Errorf("%s: %d %s", body, r.Status, r.Raw)
		}
	}
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	for _, code := range codes {
		if n := payments(t, admin, code); n != 0 {
			t.Errorf("%d payments of %s written", n, code)
		}
	}
}

// commitTrigger installs name, a database trigger ON TRANSACTION COMMIT
// that runs action (given grants, each "UPDATE ON TABLE") in a transaction
// that inserted a row into table whose CODIGO starts with prefix (marked by
// name_MARCA, a trigger of the table), and drops both when t ends.
// Database triggers load with an attachment: an env made after sees it.
func commitTrigger(t testing.TB, admin *sql.DB, name, table, prefix, action string, grants ...string) {
	t.Helper()
	stmts := []string{
		fmt.Sprintf(`CREATE OR ALTER TRIGGER %s_MARCA FOR %s AFTER INSERT AS BEGIN
			IF (NEW.CODIGO STARTING WITH '%s') THEN RDB$SET_CONTEXT('USER_TRANSACTION', '%[1]s', '1');
		END`, name, table, prefix),
		fmt.Sprintf(`CREATE OR ALTER TRIGGER %s ON TRANSACTION COMMIT AS BEGIN
			IF (RDB$GET_CONTEXT('USER_TRANSACTION', '%[1]s') = '1') THEN %s;
		END`, name, action),
	}
	for _, g := range grants {
		stmts = append(stmts, fmt.Sprintf("GRANT %s TO TRIGGER %s", g, name))
	}
	triggers(t, admin, []string{name, name + "_MARCA"}, stmts...)
}

// triggers runs stmts, which create the triggers names (and grant them
// what they need), and drops those when t ends.
func triggers(t testing.TB, admin *sql.DB, names []string, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	for _, s := range stmts {
		if _, err := admin.ExecContext(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, name := range names {
			if _, err := admin.ExecContext(ctx, "DROP TRIGGER "+name); err != nil {
				t.Errorf("dropping %s: %v", name, err)
			}
		}
	})
}

// holdCandado holds TEST_CANDADO's row 1, as an ERP user's open
// transaction would, until t ends or the returned transaction ends.
func holdCandado(t testing.TB, admin *sql.DB) *sql.Tx {
	t.Helper()
	holder, err := admin.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Rollback() }) //nolint:errcheck // it only holds the lock
	if _, err := holder.Exec("UPDATE TEST_CANDADO SET N = N + 1 WHERE ID = 1"); err != nil {
		t.Fatal(err)
	}
	return holder
}

// TestAnUndoneBlockRunsNoCommitTrigger: a write's block that fails, undone,
// never runs an ON TRANSACTION COMMIT trigger, though it left what the
// trigger acts on (here the context variable an ERP's trigger set for each
// row the block inserted): in such a database a write's commit waits for
// its block's answer (Session.commitWith), where one sent with it would run
// the trigger. A selectable write's first run on a connection is such a
// block (its one-row form fails on the second row, and it runs again):
// the trigger runs once, for the run that wrote.
func TestAnUndoneBlockRunsNoCommitTrigger(t *testing.T) {
	cfg := fbtest.Demo(t)
	admin := setupKeys(t, cfg)
	commitTrigger(t, admin, "TEST_SALIDA", "TEST_PAGOS", "OUTB", "UPDATE TEST_CANDADO SET N = N + 1 WHERE ID = 1", "UPDATE ON TEST_CANDADO")
	e := newEnv(t, gateway.Config{}, map[string]any{"demo": anonymous(cfg)})
	runs := func() int { return count(t, admin, "SELECT N FROM TEST_CANDADO WHERE ID = 1") }
	// A read first: the write's connection answered a moment ago.
	if r := e.post(t, path("demo", "executequery"), `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`); r.Status != http.StatusOK {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	before := runs()
	code := "OUTB" + newCode()[1:11]
	if r := e.post(t, path("demo", "execute"), fmt.Sprintf(`{"CLAVE":"Set_Tres","CODIGO":%q}`, code)); r.Status != http.StatusOK || len(r.Body.Data) != 3 {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	if n := runs() - before; n != 1 || payments(t, admin, code) != 3 {
		t.Fatalf("the commit trigger ran %d times, %d payments, for one write of 3", n, payments(t, admin, code))
	}
}

// TestATransactionStartTriggersRefusal: a database trigger ON TRANSACTION
// START that refuses the gateway's transactions (an ERP in maintenance) is
// the database's refusal, its text in ex_execsql, on a new connection (whose
// transaction begins with a statement's prepare) as on a warm one (where it
// begins with the execute), for reads and writes alike; once it lets them
// through, the same connections serve.
func TestATransactionStartTriggersRefusal(t *testing.T) {
	cfg := fbtest.Demo(t)
	admin := setupKeys(t, cfg)
	ctx := context.Background()
	triggers(t, admin, []string{"TEST_MANTENIMIENTO"},
		`CREATE OR ALTER TRIGGER TEST_MANTENIMIENTO ON TRANSACTION START AS BEGIN
			IF (CURRENT_USER = 'GATEWAY' AND EXISTS (SELECT 1 FROM TEST_CANDADO WHERE ID = 99)) THEN EXCEPTION REST_ERROR 'ERP EN MANTENIMIENTO';
		END`,
		`GRANT SELECT ON TEST_CANDADO TO TRIGGER TEST_MANTENIMIENTO`)
	maintenance := func(on bool) {
		t.Helper()
		q := "DELETE FROM TEST_CANDADO WHERE ID = 99"
		if on {
			q = "INSERT INTO TEST_CANDADO VALUES (99, 0)"
		}
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { maintenance(false) }) // before the trigger's drop
	e := newEnv(t, gateway.Config{}, map[string]any{"demo": tenants.Instance{Connection: cfg, Idempotency: true}})
	auth := []string{"Authorization", "Bearer " + fbtest.Token(t, e.acc, "demo")}
	read := `{"CLAVE":"Get_Referencias","CODIGO":"REF0001"}`
	code := "M" + newCode()[:12]
	document := `[` + pago(code, 1) + `,` + pago(code, 2) + `]`
	refused := `{"cod_error":0,"ex_execsql":"[firebirdsql]exception 16\r\nREST_ERROR\r\nERP EN MANTENIMIENTO\r\nAt trigger 'TEST_MANTENIMIENTO' line: 2, col: `
	notRun := `{"cod_error":1502,"ex_execsql":"call 0 of the batch was refused: this call did not run; nothing of the batch was written"}`
	maintenance(true)
	for i, tt := range []struct {
		endpoint, body, key string
		batch               bool
	}{
		{"executequery", read, "", false}, // a new connection
		{"executequery", read, "", false}, // the same, warm
		{"execute", pago(code, 1), "", false},
		{"execute", pago(code, 1), "m1-" + code, false},
		{"execute", document, "", true},
		{"execute", document, "m2-" + code, true},
		{"execute", `[` + pago(code, 1) + `,` + read + `]`, "m3-" + code, true}, // call by call
	} {
		headers := auth
		if tt.key != "" {
			headers = append(slices.Clone(auth), "Idempotency-Key", tt.key)
		}
		r := send(t, e.h, tt.endpoint, tt.body, headers...)
		ok := strings.HasPrefix(r.body, refused)
		if tt.batch {
			ok = strings.HasPrefix(r.body, "["+refused) && strings.HasSuffix(r.body, ","+notRun+"]")
		}
		if r.status != http.StatusOK || !ok {
			t.Errorf("%d %s: %d %s", i, tt.body, r.status, r.body)
		}
	}
	maintenance(false)
	if r := send(t, e.h, "executequery", read, auth...); r.status != http.StatusOK || !strings.Contains(r.body, `"data"`) {
		t.Fatalf("after: %d %s", r.status, r.body)
	}
	if r := send(t, e.h, "execute", document, auth...); r.status != http.StatusOK || !strings.Contains(r.body, `"data"`) || payments(t, admin, code) != 2 {
		t.Fatalf("after: %d %s", r.status, r.body)
	}
}

// TestATransactionStartTriggerThatWaitsForALock: a trigger ON TRANSACTION
// START whose write gives up waiting for a row an ERP user holds is a lock
// (503, 1201, Retry-After), as a statement's is, though the transaction
// began with a prepare; nothing is written.
func TestATransactionStartTriggerThatWaitsForALock(t *testing.T) {
	cfg := fbtest.Demo(t)
	admin := setupKeys(t, cfg)
	triggers(t, admin, []string{"TEST_INICIO_CANDADO"},
		`CREATE OR ALTER TRIGGER TEST_INICIO_CANDADO ON TRANSACTION START AS BEGIN
			IF (CURRENT_USER = 'GATEWAY' AND RDB$GET_CONTEXT('SYSTEM', 'READ_ONLY') = 'FALSE') THEN UPDATE TEST_CANDADO SET N = N + 1 WHERE ID = 1;
		END`,
		`GRANT UPDATE ON TEST_CANDADO TO TRIGGER TEST_INICIO_CANDADO`)
	e := newEnv(t, gateway.Config{Timeout: 8 * time.Second}, map[string]any{"demo": anonymous(cfg)})
	holder := holdCandado(t, admin)
	code := "L" + newCode()[:12]
	r := e.post(t, path("demo", "execute"), pago(code, 1)) // a new connection: its first prepare begins the transaction
	if r.Status != http.StatusServiceUnavailable || *r.Body.CodError != int(erp.CodeUnavailable) || !strings.Contains(*r.Body.ExExecSQL, "locked") || r.Header.Get("Retry-After") != "1" {
		t.Errorf("%d %s", r.Status, r.Raw)
	}
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	if n := payments(t, admin, code); n != 0 {
		t.Errorf("%d payments of %s written", n, code)
	}
}
