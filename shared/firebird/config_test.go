package firebird

import (
	"encoding/json"
	"net/url"
	"testing"

	"github.com/erp-gateway/gateway/shared/erp"
)

func TestDSNCarriesAwkwardPasswords(t *testing.T) {
	c := erp.Connection{Host: "db.example", Database: "/data/erp.fdb", User: "GATEWAY", Password: "p@ss:w/rd?#&%", Role: "R"}
	u, err := url.Parse(DSN(c))
	if err != nil {
		t.Fatal(err)
	}
	if pw, _ := u.User.Password(); pw != c.Password {
		t.Fatalf("password %q", pw)
	}
	if u.Host != "db.example:3050" || u.Path != "//data/erp.fdb" {
		t.Fatalf("host %q path %q", u.Host, u.Path)
	}
	if q := u.Query(); q.Get("role") != "R" {
		t.Fatalf("query %v", q)
	}
}

// TestDSNTakesEveryHostCheckAccepts: a host the driver's URL cannot carry
// fails its parse with the whole connection string, password included, in
// the error; erp.Connection.Check must refuse every such host first.
func TestDSNTakesEveryHostCheckAccepts(t *testing.T) {
	for _, host := range []string{
		"db.example", "10.0.0.5", "::1", "2001:db8::5", "SERVIDOR_ERP", "erp-01.office.lan",
		"db host", "db:3050", "a/b", "[::1", "[::1]", "fe80::1%eth0", "a@b", "a?b", "a#b", "-x", "ñandú",
	} {
		c := erp.Connection{Host: host, Database: "/d.fdb", User: "u", Password: "hunter2"}
		if c.Check() != nil {
			continue
		}
		u, err := url.Parse(DSN(c))
		if err != nil {
			t.Fatalf("host %q passes Check but not the DSN's parse: %v", host, err)
		}
		if u.Hostname() != host {
			t.Fatalf("host %q reaches the driver as %q", host, u.Hostname())
		}
	}
}

func TestDSNOptions(t *testing.T) {
	base := erp.Connection{Host: "h", Database: "/d.fdb", User: "u"}
	tests := []struct {
		name string
		doc  string // the instance document's connection settings beyond base
		want map[string]string
	}{
		{"defaults", `{}`, map[string]string{"charset": "UTF8", "wire_crypt": "required", "auth_plugin_name": "Srp256",
			"auth_plugin_list": "Srp256,Srp", "wire_compress": "false", "timezone": "UTC", "cancel_hard_drop": "true", "cancel_hard_drop_grace": "200"}},
		{"earlier documents' boolean true", `{"wire_crypt":true}`, map[string]string{"wire_crypt": "enabled"}},
		{"earlier documents' boolean false", `{"wire_crypt":false}`, map[string]string{"wire_crypt": "disabled"}},
		{"policy by name", `{"wire_crypt":"enabled"}`, map[string]string{"wire_crypt": "enabled"}},
		{"legacy auth only when listed", `{"auth_plugin":"Legacy_Auth","auth_plugin_list":"Srp256, Legacy_Auth"}`,
			map[string]string{"auth_plugin_name": "Legacy_Auth", "auth_plugin_list": "Srp256,Legacy_Auth"}},
		{"a character set in lower case", `{"charset":"utf8"}`, map[string]string{"charset": "UTF8"}},
		{"compression and zone", `{"wire_compress":true,"timezone":"America/Bogota","charset":"WIN1252"}`,
			map[string]string{"wire_compress": "true", "timezone": "America/Bogota", "charset": "WIN1252"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			if err := json.Unmarshal([]byte(tt.doc), &c); err != nil {
				t.Fatal(err)
			}
			if err := c.Check(); err != nil {
				t.Fatal(err)
			}
			u, err := url.Parse(DSN(c))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.want {
				if got := u.Query().Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}
