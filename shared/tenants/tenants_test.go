package tenants

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseInstance(t *testing.T) {
	tests := []struct {
		name, doc, wantErr string
	}{
		{"minimal", `{"host":"h","database":"d","user":"u","password":"p"}`, ""},
		{"missing host", `{"database":"d","user":"u","password":"p"}`, "host is required"},
		{"misspelt key", `{"host":"h","database":"d","user":"u","pasword":"p"}`, `unknown field "pasword"`},
		{"bad plugin", `{"host":"h","database":"d","user":"u","auth_plugin":"Kerberos"}`, "auth_plugin"},
		{"port as text", `{"host":"h","database":"d","user":"u","port":"3050"}`, "port"},
		{"not JSON, password not echoed", `{"host":"h","password":"hunter2"`, "not a valid JSON object"},
		// A put-secret-value pasted twice must not drop its second half.
		{"two documents", `{"host":"h","database":"d","user":"u","password":"hunter2"}{"host":"h","database":"d","user":"u","revoked_tokens":["0123456789abcdef0123456789abcdef"]}`, "something follows the document's closing brace"},
		{"a document and more", `{"host":"h","database":"d","user":"u","password":"hunter2"} x`, "something follows"},
		{"wire_crypt as a number", `{"host":"h","database":"d","user":"u","wire_crypt":1}`, `wire_crypt must be "required", "enabled" or "disabled"`},
		{"wire_crypt as an object", `{"host":"h","database":"d","user":"u","wire_crypt":{"password":"hunter2"}}`, `wire_crypt must be`},
		// A second revoked_tokens line, added instead of extending the
		// list, would otherwise drop the first's revocations.
		{"a setting twice", `{"host":"h","database":"d","user":"u","password":"hunter2","revoked_tokens":["0123456789abcdef0123456789abcdef"],"revoked_tokens":[]}`, `"revoked_tokens" is given twice`},
		{"a setting twice, in another case", `{"host":"h","database":"d","user":"u","password":"hunter2","Password":"x"}`, `"Password" is given twice`},
		{"a password unquoted is not quoted back", `{"host":"h","database":"d","user":"u","password":hunter2}`, "not valid JSON at byte"},
		{"the machine's zone", `{"host":"h","database":"d","user":"u","timezone":"Local"}`, "timezone must be an IANA zone name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseInstance([]byte(tt.doc))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("got %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`{"a":{"host":"h","database":"d","user":"u","password":"p"}}`), 0o600)
	f, err := LoadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if inst, err := f.Lookup(context.Background(), "a"); err != nil || inst.Host != "h" {
		t.Fatalf("%+v %v", inst, err)
	}
	if _, err := f.Lookup(context.Background(), "b"); !errors.Is(err, ErrUnknown) {
		t.Fatalf("unknown instance: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"a.b":{"host":"h","database":"d","user":"u"}}`), 0o600)
	if _, err := LoadFile(bad); err == nil {
		t.Fatal("accepted an invalid instance name")
	}
	os.WriteFile(bad, []byte(`{"a":{"host":"h","database":"d","user":"u"},"a":{"host":"i","database":"d","user":"u"}}`), 0o600)
	if _, err := LoadFile(bad); err == nil || !strings.Contains(err.Error(), `instance "a" is given twice`) {
		t.Fatalf("an instance given twice: %v", err)
	}
}
