package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/erp-gateway/gateway/shared/access"
)

// TestTheDemoTokenIsOne: the demo token written out for copying (README's
// examples, the guide, make run's curl lines, the tools' defaults) is one
// token, and the demo access document opens the demo instance with it.
func TestTheDemoTokenIsOne(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "infra", "access.demo.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := access.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	token := regexp.MustCompile(`erpgw_demo_[A-Za-z0-9_.-]+`)
	files := append(guide(t), filepath.Join(root, "README.md"), filepath.Join(root, "Makefile"), filepath.Join(root, "infra", "load", "main.go"))
	seen := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, tok := range token.FindAllString(string(b), -1) {
			seen[tok] = f
		}
	}
	if len(seen) != 1 {
		t.Fatalf("%d demo tokens written out, want one: %v", len(seen), seen)
	}
	for tok, f := range seen {
		if _, err := doc.Verify("demo", tok); err != nil {
			t.Fatalf("%s: the demo token does not open demo with infra/access.demo.json: %v", f, err)
		}
	}
}
