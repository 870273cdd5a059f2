// Package fbtest gives tests the Firebird databases `make test` prepares
// (infra/firebird.sh): the demo ERP in UTF8, another ERP in WIN1252 whose
// REST_ERROR has another number, and a legacy ERP in SQL dialect 1. A test
// that needs them fails, never skips, when they are not there. It also
// makes the access documents and tokens tests open instances with.
package fbtest

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/access"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/idempotency"
)

func env(t testing.TB, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set: run the tests with `make test`, which starts Firebird and creates the test databases", name)
	}
	return v
}

func config(t testing.TB, dbVar string) erp.Connection {
	return erp.Connection{
		Host:     env(t, "FB_TEST_HOST"),
		Port:     3050,
		Database: env(t, dbVar),
		User:     env(t, "FB_TEST_USER"),
		Password: env(t, "FB_TEST_PASSWORD"),
	}
}

// Demo is the demo ERP (UTF8, REST_ERROR number 16) as the gateway's user.
func Demo(t testing.TB) erp.Connection { return config(t, "FB_TEST_DEMO_DB") }

// Reader is the demo ERP as the reads' own user, which may run the read
// procedures and nothing that writes (infra/sql/schema.sql).
func Reader(t testing.TB) erp.Connection {
	c := Demo(t)
	c.User, c.Password = env(t, "FB_TEST_READER_USER"), env(t, "FB_TEST_READER_PASSWORD")
	return c
}

// Other is the other ERP (WIN1252, REST_ERROR number 19, other data).
func Other(t testing.TB) erp.Connection {
	c := config(t, "FB_TEST_OTHER_DB")
	c.Charset = "UTF8" // the connection's character set; the database's is WIN1252
	return c
}

// Dialect1 is a legacy ERP in SQL dialect 1 (infra/sql/dialect1.sql),
// which keeps idempotency keys.
func Dialect1(t testing.TB) erp.Connection { return config(t, "FB_TEST_DIALECT1_DB") }

// Admin is cfg as SYSDBA, for checking database state and monitoring tables.
func Admin(t testing.TB, cfg erp.Connection) erp.Connection {
	cfg.User = "SYSDBA"
	cfg.Password = env(t, "FB_TEST_SYSDBA_PASSWORD")
	return cfg
}

// Open opens a raw driver pool, closed when the test ends, and checks that the
// server answers.
func Open(t testing.TB, cfg erp.Connection) *sql.DB {
	t.Helper()
	// Checked first: a host the DSN cannot carry fails the driver's parse
	// with the whole DSN, password included, in its error.
	if err := cfg.Check(); err != nil {
		t.Fatalf("test connection %s: %v", cfg, err)
	}
	db, err := sql.Open("firebirdsql", firebird.DSN(cfg))
	if err != nil {
		t.Fatalf("open %s: %v", cfg, err)
	}
	t.Cleanup(func() { db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("Firebird at %s does not answer (run the tests with `make test`): %v", cfg, err)
	}
	return db
}

// Keys is an access document and the signing key its tokens are minted
// with: an operator's two halves, for tests.
type Keys struct {
	*access.Document
	Signer *access.Signer
}

// Mint mints a token for instance with the signing key.
func (k *Keys) Mint(instance string, limits erp.Limits) (token, id string, err error) {
	return k.Signer.Mint(instance, limits)
}

// Access returns an access document with a fresh key, parsed and as JSON,
// letting the named instances in without a token, and its signing key.
func Access(t testing.TB, anonymous ...string) (*Keys, []byte) {
	t.Helper()
	signer, err := access.NewSigner("test")
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(map[string]any{"keys": map[string]string{signer.KeyID(): signer.PublicKey()}, "anonymous": append([]string{}, anonymous...)})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := access.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return &Keys{Document: doc, Signer: signer}, data
}

// Token mints a token of keys for instance.
func Token(t testing.TB, keys *Keys, instance string) string {
	t.Helper()
	token, _, err := keys.Mint(instance, erp.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// DemoAccess is infra/access.demo.json, which the demo token of the README
// is minted with; root is the path to the repository's top.
func DemoAccess(t testing.TB, root string) *access.Current {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "infra", "access.demo.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := access.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return access.Static(doc)
}

// PeakRSS is a process's peak resident memory, from /proc.
func PeakRSS(t testing.TB, pid int) string {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// KeyTable installs the idempotency keys' table in cfg's database, with the
// DDL make idempotency-sql prints, unless it is there.
func KeyTable(t testing.TB, cfg erp.Connection) {
	t.Helper()
	admin := Open(t, Admin(t, cfg))
	defer admin.Close() // see Setup
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var exists int
	if err := admin.QueryRowContext(ctx, `SELECT COUNT(*) FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = ?`, idempotency.KeyTable).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists > 0 {
		return
	}
	for _, stmt := range strings.Split(idempotency.TableSQL(strings.ToUpper(cfg.User)), ";\n") {
		var lines []string
		for _, l := range strings.Split(stmt, "\n") {
			if !strings.HasPrefix(l, "--") {
				lines = append(lines, l)
			}
		}
		stmt = strings.TrimSpace(strings.Join(lines, "\n"))
		if stmt == "" || stmt == "COMMIT" {
			continue
		}
		if _, err := admin.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

// Setup runs stmts, in order, in cfg's database as SYSDBA: the DDL and
// grants of a test's procedures.
func Setup(t testing.TB, cfg erp.Connection, stmts ...string) {
	t.Helper()
	admin := Open(t, Admin(t, cfg))
	// Closed now, not when the test ends: the driver keeps each idle
	// connection's autocommit transaction open (it commits retaining), and
	// one held for the test's length holds the oldest active transaction
	// back for it (firebird.Active).
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, stmt := range stmts {
		if _, err := admin.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%.200s: %v", stmt, err)
		}
	}
}

// OpenWrites is how many read-write transactions the gateway's user
// (GATEWAY) has open (firebird.Active).
func OpenWrites(t testing.TB, admin *sql.DB) int {
	t.Helper()
	return scalar(t, admin, `SELECT COUNT(*) FROM MON$TRANSACTIONS t JOIN MON$ATTACHMENTS a ON a.MON$ATTACHMENT_ID = t.MON$ATTACHMENT_ID
		WHERE a.MON$USER = 'GATEWAY' AND t.MON$READ_ONLY = 0 AND `+firebird.Active)
}

// AfterLoad fails t unless the gateway left what a guest must after a
// load: no read-write transaction open, and nothing pinning the oldest
// active transaction (NEXT - OAT at most 5).
func AfterLoad(t testing.TB, admin *sql.DB) {
	t.Helper()
	// The harness's own statements run in the driver's autocommit
	// transaction, which an idle connection keeps open: it would pin the
	// oldest active transaction itself once the gateway has begun a few
	// more (a sweep while many rows are checked). Closing the idle
	// connections ends it; the measure is then taken on a new one.
	admin.SetMaxIdleConns(0)
	admin.SetMaxIdleConns(2) // database/sql's default
	if n := OpenWrites(t, admin); n != 0 {
		t.Errorf("%d read-write transactions of the gateway open after the load", n)
	}
	if n := scalar(t, admin, `SELECT MON$NEXT_TRANSACTION - MON$OLDEST_ACTIVE FROM MON$DATABASE`); n > 5 {
		t.Errorf("NEXT - OAT = %d after the load, want at most 5; the oldest transactions alive:\n%s", n, oldestActive(t, admin))
	}
}

// oldestActive describes the oldest live transactions, a line each: whose
// they are, when they began and how, to tell the gateway's from the test's.
func oldestActive(t testing.TB, admin *sql.DB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tx, err := admin.BeginTx(ctx, nil) // the monitoring tables as they are now (scalar)
	if err != nil {
		return err.Error()
	}
	defer tx.Commit() //nolint:errcheck // read-only work
	rows, err := tx.QueryContext(ctx, `SELECT FIRST 5 t.MON$TRANSACTION_ID, TRIM(a.MON$USER), COALESCE(a.MON$REMOTE_PROCESS, ''),
		COALESCE(a.MON$REMOTE_PID, 0), t.MON$ISOLATION_MODE, t.MON$READ_ONLY, CAST(t.MON$TIMESTAMP AS VARCHAR(24)),
		IIF(a.MON$ATTACHMENT_ID = CURRENT_CONNECTION, 1, 0), (SELECT MON$OLDEST_ACTIVE FROM MON$DATABASE)
		FROM MON$TRANSACTIONS t JOIN MON$ATTACHMENTS a ON a.MON$ATTACHMENT_ID = t.MON$ATTACHMENT_ID
		ORDER BY t.MON$TRANSACTION_ID`)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, pid, isolation, readOnly, own, oat int64
		var user, process, began string
		if err := rows.Scan(&id, &user, &process, &pid, &isolation, &readOnly, &began, &own, &oat); err != nil {
			return err.Error()
		}
		fmt.Fprintf(&b, "  transaction %d (OAT %d) of %s, %s pid %d, isolation %d, read-only %d, began %s, this query's attachment %d\n",
			id, oat, user, process, pid, isolation, readOnly, began, own)
	}
	if err := rows.Err(); err != nil {
		fmt.Fprintf(&b, "  %v\n", err)
	}
	return b.String()
}

// KillFirebird kills the Firebird server (kill -9); fbguard starts a new
// one (WaitForFirebird).
func KillFirebird(t testing.TB) {
	t.Helper()
	if out, err := exec.Command("pkill", "-9", "-x", "firebird").CombinedOutput(); err != nil {
		t.Errorf("kill -9 firebird: %v %s", err, out)
	}
}

// WaitForFirebird waits until the server fbguard restarted answers again.
func WaitForFirebird(t testing.TB, admin *sql.DB) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if admin.Ping() == nil {
			return
		}
	}
	t.Fatal("Firebird did not come back within 30 s")
}

// ThirdParties is how many third parties of code the demo database holds.
// A kill may have ended admin's pooled connections: it tries a few.
func ThirdParties(t testing.TB, admin *sql.DB, code string) int {
	t.Helper()
	var n int
	var err error
	for range 20 {
		if err = admin.QueryRow(`SELECT COUNT(*) FROM TERCEROS WHERE CODIGO = ?`, code).Scan(&n); err == nil {
			return n
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal(err)
	return 0
}

func scalar(t testing.TB, db *sql.DB, query string, args ...any) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// In a transaction of its own: the monitoring tables are a snapshot
	// taken at a transaction's first read of them, and the driver's
	// autocommit transaction lasts as long as its connection.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer tx.Commit() //nolint:errcheck // read-only work
	var n int
	if err := tx.QueryRowContext(ctx, query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// SetTerceros is a body of the demo catalog's Set_Terceros that creates
// the company third party code, named name.
func SetTerceros(code, name string) string {
	return `{"CLAVE":"Set_Terceros","CODIGO":"` + code + `","DV":"3","NATURALEZA":"J","EMPRESA":"` + name + ` ` + code + `","RAZON_COMERCIAL":"` + name +
		`","DIRECCION":"Calle 1","CODIDENTIDAD":"NIT","CODSOCIEDAD":"SAS","CODPAIS":"CO","CODMUNICIPIO":"05001","CODACTIVIDAD":"NA","CODZONA":"NA"}`
}

// ReadmeStart leaves cfg's database as the README's examples expect it
// when they are replayed in order: without the third party the Set_Terceros
// example creates, and without orders, the next order numbered 1.
func ReadmeStart(t testing.TB, cfg erp.Connection) {
	t.Helper()
	Setup(t, cfg, "DELETE FROM TERCEROS WHERE CODIGO = '901234567'", "DELETE FROM PEDIDOS_LINEAS", "DELETE FROM PEDIDOS",
		"ALTER SEQUENCE GEN_PEDIDOS RESTART WITH 0")
}

// Document is a batch (served by infra/catalog.demo.json): a new third
// party code, an order for it and two lines taking the order's number.
func Document(code string) string {
	line := func(ref string) string {
		return `{"CLAVE":"Set_Pedido_Linea","NUMERO":{"$from":1,"$field":"NUMERO"},"REFERENCIA":"` + ref + `","CANTIDAD":"1"}`
	}
	return "[" + SetTerceros(code, "Doc") + `,{"CLAVE":"Set_Pedido","TERCERO":"` + code + `","NOTA":"doc"},` + line("REF0001") + "," + line("REF0002") + "]"
}

// DocumentRows counts what Document(code) wrote: its orders and their lines.
func DocumentRows(t testing.TB, admin *sql.DB, code string) (orders, lines int) {
	t.Helper()
	return scalar(t, admin, `SELECT COUNT(*) FROM PEDIDOS WHERE TERCERO = ?`, code),
		scalar(t, admin, `SELECT COUNT(*) FROM PEDIDOS_LINEAS l JOIN PEDIDOS p ON p.NUMERO = l.NUMERO WHERE p.TERCERO = ?`, code)
}

// Docs is the README and the operator's guide, whose examples tests replay,
// in a fixed order: README.md, the guide's index (infra/README.md), then its
// pages (infra/docs/*.md) by name; root is the path to the repository's top.
func Docs(t testing.TB, root string) []byte {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "infra", "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages of the guide under %s (%v)", filepath.Join(root, "infra", "docs"), err)
	}
	var docs []byte
	for _, f := range append([]string{filepath.Join(root, "README.md"), filepath.Join(root, "infra", "README.md")}, pages...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(append(docs, data...), '\n')
	}
	return docs
}
