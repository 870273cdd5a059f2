package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/access"
	"github.com/erp-gateway/gateway/shared/awstest"
	"github.com/erp-gateway/gateway/shared/erp"
)

func TestParseLimits(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name                           string
		readOnly                       bool
		claves, expires, catalog, want string // want: describe(limits), or the error
	}{
		{"none", false, "", "never", "", "every operation, with no expiry"},
		{"a year by default", false, "", "", "", "every operation, until 2027-11-23T00:00:00Z (UTC)"},
		{"reads", true, "", "never", "", "reads only, with no expiry"},
		{"a day", false, "", "2027-06-30", "", "every operation, until 2027-07-01T00:00:00Z (UTC)"},
		{"an instant", false, "", "2027-06-30T18:00:00-05:00", "", "every operation, until 2027-06-30T23:00:00Z (UTC)"},
		{"CLAVEs, once each", false, "Get_Terceros, Set_Terceros,Get_Terceros", "never", "", "Get_Terceros, Set_Terceros, with no expiry"},
		{"a CLAVE of another catalog", true, "Get_Inventario_Precio", "never", "../catalog.demo.json", "Get_Inventario_Precio, with no expiry"},
		{"a CLAVE not in the catalog", false, "Get_Inventario_Precio", "", "", `"Get_Inventario_Precio" is not an operation`},
		{"a write on a read-only token", true, "Set_Terceros", "", "", "Set_Terceros is a write"},
		{"expired already", false, "", "2026-11-21", "", "in the past"},
		{"not a date", false, "", "30/06/2027", "", "want YYYY-MM-DD"},
		{"a duration", true, "", "2h", "", "reads only, until 2026-11-22T14:00:00Z (UTC)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := parseLimits(tt.readOnly, tt.claves, tt.expires, tt.catalog, now)
			got := describe(l)
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestMintsALimitedToken: the token printed with the demo signing key opens
// its instance, in the demo access document, with the limits asked for,
// and its id is the one printed; the access document alone cannot mint.
func TestMintsALimitedToken(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"-instance", "acme", "-signing-key", "../signing-key.demo.json", "-read-only", "-expires", "2099-01-01"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^(erpgw_\S+)\n.*: ([0-9a-f]{32})\n`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("output: %s", out.String())
	}
	data, err := os.ReadFile("../access.demo.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := access.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	g, err := doc.Verify("acme", m[1])
	if err != nil || g.TokenID != m[2] || !g.ReadOnly || g.Expires.Year() != 2099 {
		t.Fatalf("Verify = %+v, %v", g, err)
	}
	err = run(context.Background(), []string{"-instance", "acme", "-signing-key", "../access.demo.json"}, &out)
	if err == nil || !strings.Contains(err.Error(), "public keys only") {
		t.Fatalf("minting with the access document: %v", err)
	}
}

// TestNewKeyMintsWhatItsPublicKeyVerifies: make token-key's signing key
// mints tokens the access document it prints the entry for verifies.
func TestNewKeyMintsWhatItsPublicKeyVerifies(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-new-key", "2026-11"}, &out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	start, end := strings.Index(text, "{"), strings.Index(text, "}")
	entry := regexp.MustCompile(`(?m)^("2026-11": "[^"]+")$`).FindStringSubmatch(text)
	if start < 0 || end < start || entry == nil {
		t.Fatalf("output: %s", text)
	}
	signer, err := access.ParseSigner([]byte(text[start : end+1]))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := access.Parse([]byte(`{"keys":{` + entry[1] + `}}`))
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := signer.Mint("acme", erp.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := doc.Verify("acme", token); err != nil {
		t.Fatal(err)
	}
}

// TestChecksTheAccessDocument: with -access (a file) or -access-secret (a
// secret, through the SDK), the token minted is verified with the
// document the deployment reads, so an edit of it is checked before an
// integrator meets it; a word that is not a flag is refused, never
// dropped with the limits after it.
func TestChecksTheAccessDocument(t *testing.T) {
	sm := awstest.Start(t, true)
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-new-key", "2027-05"}, &out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	ownKey := filepath.Join(dir, "signing-key.json")
	if err := os.WriteFile(ownKey, []byte(text[strings.Index(text, "{"):strings.Index(text, "}")+1]), 0o600); err != nil {
		t.Fatal(err)
	}
	entry := regexp.MustCompile(`(?m)^("2027-05": "[^"]+")$`).FindStringSubmatch(text)[1]
	demo, err := os.ReadFile("../access.demo.json")
	if err != nil {
		t.Fatal(err)
	}
	demoEntry := regexp.MustCompile(`"demo"\s*:\s*"[^"]+"`).FindString(string(demo))
	sm.Put("erp-gateway/access", `{"keys":{`+entry+`}}`)
	sm.Put("erp-gateway/twice", `{"keys":{`+entry+`,`+strings.Replace(demoEntry, `"demo"`, `"2027-05"`, 1)+`}}`)
	sm.Put("erp-gateway-minting/2027-05", text[strings.Index(text, "{"):strings.Index(text, "}")+1])
	sm.Put("erp-gateway/demo-access", string(demo))
	tests := []struct {
		name string
		args []string
		want string // in the output, or the error
	}{
		{"the demo key, the demo document", []string{"-signing-key", "../signing-key.demo.json", "-access", "../access.demo.json"},
			"it opens instance acme with the access document ../access.demo.json, which holds the public demo key"},
		{"the demo key is named", []string{"-signing-key", "../signing-key.demo.json"}, "signed with the demo key, which is public"},
		{"a key of our own, its document in Secrets Manager", []string{"-signing-key", ownKey, "-access-secret", "erp-gateway/access"},
			"it opens instance acme with the access document erp-gateway/access\n"},
		{"both from Secrets Manager", []string{"-signing-key-secret", "erp-gateway-minting/2027-05", "-access-secret", "erp-gateway/access"},
			"it opens instance acme with the access document erp-gateway/access\n"},
		{"a document without the key", []string{"-signing-key", ownKey, "-access", "../access.demo.json"},
			"the access document does not open instance acme with this token"},
		// What make run's file may hold, a deployment's must not.
		{"the demo key in a deployment's document", []string{"-signing-key", "../signing-key.demo.json", "-access-secret", "erp-gateway/demo-access"},
			"holds the public demo key, so the deployment reading it refuses every token (1207)"},
		{"a document giving an id twice", []string{"-signing-key", ownKey, "-access-secret", "erp-gateway/twice"}, `key id "2027-05" is given twice`},
		{"a document that is not there", []string{"-signing-key", ownKey, "-access-secret", "erp-gateway/none"}, "erp-gateway/none"},
		{"a stray word before a limit", []string{"-signing-key", ownKey, "-read-only", "true", "-expires", "2h"}, `"true" is not a flag`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), append([]string{"-instance", "acme"}, tt.args...), &out)
			got := out.String()
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			if strings.Contains(tt.name, "own") && strings.Contains(got, "demo key") {
				t.Fatalf("a key of our own named as the demo key: %q", got)
			}
		})
	}
}
