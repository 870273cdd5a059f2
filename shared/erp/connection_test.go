package erp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestCheckRefuses(t *testing.T) {
	tests := []struct{ name, doc, problem string }{
		{"no host", `{"database":"d","user":"u"}`, "host is required"},
		{"host with a space", `{"host":"db host","database":"d","user":"u"}`, "host must be"},
		{"host with a port", `{"host":"db:3050","database":"d","user":"u"}`, "host must be"},
		{"host with a path", `{"host":"a/b","database":"d","user":"u"}`, "host must be"},
		{"half an IPv6 literal", `{"host":"[::1","database":"d","user":"u"}`, "host must be"},
		{"IPv6 with a zone", `{"host":"fe80::1%eth0","database":"d","user":"u"}`, "host must be"},
		{"unknown wire_crypt", `{"host":"h","database":"d","user":"u","wire_crypt":"maybe"}`, "wire_crypt must be"},
		{"wire_crypt a number", `{"host":"h","database":"d","user":"u","wire_crypt":1}`, "wire_crypt must be"},
		{"unknown plugin", `{"host":"h","database":"d","user":"u","auth_plugin":"Win_Sspi"}`, "auth_plugin must be"},
		{"legacy auth not listed", `{"host":"h","database":"d","user":"u","auth_plugin":"Legacy_Auth"}`, "not in auth_plugin_list"},
		{"unknown plugin listed", `{"host":"h","database":"d","user":"u","auth_plugin_list":"Srp256,Foo"}`, "auth_plugin_list may hold only"},
		{"unknown zone", `{"host":"h","database":"d","user":"u","timezone":"Mars/Olympus"}`, "timezone must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Connection
			err := json.Unmarshal([]byte(tt.doc), &c)
			if err == nil {
				err = c.Check()
			}
			if err == nil || !strings.Contains(err.Error(), tt.problem) {
				t.Fatalf("got %v, want %q", err, tt.problem)
			}
		})
	}
}

func TestConnectionNeverPrintsThePassword(t *testing.T) {
	c := Connection{Host: "h", Database: "d", User: "u", Password: "hunter2"}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("x", "cfg", c)
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), c.String(), logs.String()} {
		if strings.Contains(s, "hunter2") {
			t.Fatalf("password in %q", s)
		}
	}
}
