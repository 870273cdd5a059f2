package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/access"
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
