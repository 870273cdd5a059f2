package thirdparty

import (
	"context"
	"database/sql"
	"errors"
	"reflect"
	"testing"

	"github.com/nakagami/firebirdsql"

	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/firebird"
)

// TestConnectionCharset holds patch 0012 against Firebird, on the demo
// (UTF8) database, arguments cast to WIN1252: on a WIN1252 connection a
// string the character set cannot hold is refused before it is sent, as Firebird refuses it on a UTF8
// connection (where the driver as released sent it as an empty string),
// and the connection serves on; what it can hold round-trips; an
// exception's text comes back as on a UTF8 connection (where it came as
// WIN1252 bytes).
func TestConnectionCharset(t *testing.T) {
	admin := fbtest.Admin(t, fbtest.Demo(t))
	open := func(cfg erp.Connection, charset string) *sql.Conn {
		cfg.Charset = charset
		db, err := sql.Open("firebirdsql", firebird.DSN(cfg))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		c, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	ctx := context.Background()
	win, utf := open(admin, "WIN1252"), open(admin, "UTF8")
	echo := func(c *sql.Conn, v string) (string, error) {
		var s string
		err := c.QueryRowContext(ctx, "SELECT CAST(? AS VARCHAR(20) CHARACTER SET WIN1252) FROM RDB$DATABASE", v).Scan(&s)
		return s, err
	}

	if got, err := echo(win, "añ€ Ñandú"); err != nil || got != "añ€ Ñandú" {
		t.Fatalf("on WIN1252: %q, %v", got, err)
	}
	_, server := echo(utf, "añ中")
	_, driver := echo(win, "añ中")
	var want, got *firebirdsql.FbError
	if !errors.As(server, &want) || !errors.As(driver, &got) {
		t.Fatalf("the server's refusal %v, the driver's %v", server, driver)
	}
	if !reflect.DeepEqual(*got, *want) {
		t.Fatalf("refused on WIN1252 with %#v, Firebird on UTF8 with %#v", *got, *want)
	}
	if got, err := echo(win, "sigue"); err != nil || got != "sigue" {
		t.Fatalf("after the refusal: %q, %v", got, err)
	}

	raise := func(c *sql.Conn) string {
		_, err := c.ExecContext(ctx, "EXECUTE BLOCK (P VARCHAR(20) = ?) AS BEGIN EXCEPTION REST_ERROR 'está ' || P; END", "BLOQ-ñ")
		if err == nil {
			t.Fatal("no exception")
		}
		return err.Error()
	}
	if w, u := raise(win), raise(utf); w != u {
		t.Fatalf("an exception's text on WIN1252 %q, on UTF8 %q", w, u)
	}
}

// TestNamesInTheConnectionCharset holds patch 0018 against Firebird: a
// column's name comes in the connection's character set, and reads the same
// on a WIN1252 connection as on a UTF8 one (it was kept as its WIN1252
// bytes, "A\xd1O", which JSON answers as "A\ufffdO").
func TestNamesInTheConnectionCharset(t *testing.T) {
	admin := fbtest.Admin(t, fbtest.Demo(t))
	ctx := context.Background()
	for _, charset := range []string{"UTF8", "WIN1252"} {
		cfg := admin
		cfg.Charset = charset
		db, err := sql.Open("firebirdsql", firebird.DSN(cfg))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rows, err := db.QueryContext(ctx, `SELECT 1 AS "AÑO", 'x' AS "Descripción €" FROM RDB$DATABASE`)
		if err != nil {
			t.Fatal(err)
		}
		cols, err := rows.Columns()
		rows.Close()
		if want := []string{"AÑO", "Descripción €"}; err != nil || !reflect.DeepEqual(cols, want) {
			t.Errorf("on %s: columns %q, %v; want %q", charset, cols, err, want)
		}
	}
}
