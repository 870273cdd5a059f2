package openapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
)

// TestDecimalPatternIsTheGatewaysReading: a value the document's pattern
// accepts is one the gateway takes (written as the pattern asks) if it lies
// in the range the description gives, and the forms the gateway refuses are
// refused by the pattern too, so a client that validates against the
// document is not told a refused value is good.
func TestDecimalPatternIsTheGatewaysReading(t *testing.T) {
	tests := []struct {
		precision, scale int
		required         bool
		good, bad        []string
		// beyond: of the pattern's form, outside the range its
		// description gives; the gateway refuses them.
		beyond []string
	}{
		{15, 4, true, []string{"1", "-1.5", "+12.25", ".5", "00012", "922337203685477.5807", "-922337203685477.5808"},
			[]string{"", ".", "+", "5.", "1.12345", "1234567890123456", "NA"}, []string{"922337203685477.5808"}},
		{15, 4, false, []string{"", "NA", "3.5"}, []string{".", "5."}, nil},
		{9, 0, true, []string{"0", "-0", "7", "-123456789", "2147483647", "-2147483648"}, []string{"7.", ".5", "12345678901"}, []string{"2147483648"}},
		{2, 2, true, []string{"0.25", ".25", "-0.5", "0", "1.5", "-327.68"}, []string{"0.125", "1234"}, []string{"327.68"}},
	}
	for _, tt := range tests {
		p := catalog.Param{Name: "X", Kind: catalog.Decimal, Precision: tt.precision, Scale: tt.scale, Required: tt.required}
		var pattern string
		for _, f := range paramSchema(p) {
			if f.k == "pattern" {
				pattern = f.v.(string)
			}
		}
		re := regexp.MustCompile(pattern)
		cat, err := catalog.New([]catalog.Operation{{Clave: "Get_X", Endpoint: catalog.ExecuteQuery, Procedure: "P", Params: []catalog.Param{p}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range tt.good {
			if !re.MatchString(v) {
				t.Errorf("NUMERIC(%d,%d) %q: refused by %s", tt.precision, tt.scale, v, pattern)
			}
			if _, err := cat.Parse(catalog.ExecuteQuery, []byte(`{"CLAVE":"Get_X","X":"`+v+`"}`)); err != nil {
				t.Errorf("NUMERIC(%d,%d) %q: the pattern takes it, the gateway refuses it: %v", tt.precision, tt.scale, v, err)
			}
		}
		for _, v := range tt.bad {
			if _, err := cat.Parse(catalog.ExecuteQuery, []byte(`{"CLAVE":"Get_X","X":"`+v+`"}`)); err == nil && tt.required {
				t.Errorf("NUMERIC(%d,%d) %q: the gateway takes it", tt.precision, tt.scale, v)
			}
			if re.MatchString(v) {
				t.Errorf("NUMERIC(%d,%d) %q: taken by %s", tt.precision, tt.scale, v, pattern)
			}
		}
		for _, v := range tt.beyond {
			if _, err := cat.Parse(catalog.ExecuteQuery, []byte(`{"CLAVE":"Get_X","X":"`+v+`"}`)); err == nil {
				t.Errorf("NUMERIC(%d,%d) %q: the gateway takes it", tt.precision, tt.scale, v)
			}
		}
	}
}

// TestKeySchemaIsTheGatewaysRule: the Idempotency-Key the document
// describes is the key the gateway takes (erp.ValidKey), at both ends of
// its length and of printable ASCII.
func TestKeySchemaIsTheGatewaysRule(t *testing.T) {
	doc, err := Document(Input{Catalog: catalog.Default(), Class: "C", Server: "http://127.0.0.1:3000"})
	if err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name   string
				Schema struct {
					MinLength, MaxLength int
					Pattern              string
				}
			}
		}
	}
	if err := json.Unmarshal(doc, &parsed); err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, methods := range parsed.Paths {
		for _, op := range methods {
			for _, p := range op.Parameters {
				if p.Name != "Idempotency-Key" {
					continue
				}
				found++
				re := regexp.MustCompile(p.Schema.Pattern)
				for _, k := range []string{"", "a", " ", "~", "order-1", "a\tb", "\x7f", "ñ", strings.Repeat("k", erp.MaxKeyLength), strings.Repeat("k", erp.MaxKeyLength+1)} {
					described := re.MatchString(k) && len(k) >= p.Schema.MinLength && len(k) <= p.Schema.MaxLength
					if described != erp.ValidKey(k) {
						t.Errorf("key %q: the document takes it %v, the gateway %v", k, described, erp.ValidKey(k))
					}
				}
			}
		}
	}
	if found == 0 {
		t.Fatal("no Idempotency-Key parameter in the document")
	}
}

// TestOctetsAreDescribedAsTheirBase64: a CHAR or VARCHAR of character set
// OCTETS is answered in base64 (answers.md), and its schema says so, its
// maxLength that of its longest value's base64.
func TestOctetsAreDescribedAsTheirBase64(t *testing.T) {
	for n := 1; n <= 7; n++ {
		s := columnSchema(catalog.DBParam{Name: "O", Type: "VARCHAR", Chars: n, Charset: "OCTETS"})
		got := map[string]any{}
		for _, e := range s {
			got[e.k] = e.v
		}
		longest := base64.StdEncoding.EncodedLen(n)
		if got["contentEncoding"] != "base64" || got["maxLength"] != longest || got["x-firebird-type"] != fmt.Sprintf("VARCHAR(%d) CHARACTER SET OCTETS", n) {
			t.Errorf("VARCHAR(%d) OCTETS: %v, want base64 of at most %d characters", n, got, longest)
		}
	}
}
