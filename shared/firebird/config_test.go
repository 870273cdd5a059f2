package firebird

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
)

func TestDSNCarriesAwkwardPasswords(t *testing.T) {
	off := false
	c := Config{Host: "db.example", Database: "/data/erp.fdb", User: "GATEWAY", Password: "p@ss:w/rd?#&%", Role: "R", WireCrypt: &off}
	u, err := url.Parse(c.DSN())
	if err != nil {
		t.Fatal(err)
	}
	if pw, _ := u.User.Password(); pw != c.Password {
		t.Fatalf("password %q", pw)
	}
	if u.Host != "db.example:3050" || u.Path != "//data/erp.fdb" {
		t.Fatalf("host %q path %q", u.Host, u.Path)
	}
	q := u.Query()
	if q.Get("charset") != "UTF8" || q.Get("role") != "R" || q.Get("wire_crypt") != "false" {
		t.Fatalf("query %v", q)
	}
}

func TestConfigNeverPrintsThePassword(t *testing.T) {
	c := Config{Host: "h", Database: "d", User: "u", Password: "hunter2"}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("x", "cfg", c)
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), c.String(), logs.String()} {
		if strings.Contains(s, "hunter2") {
			t.Fatalf("password in %q", s)
		}
	}
}
