package gateway_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/erp-gateway/gateway/shared/gateway"
)

// TestREADMEExamples replays every curl example of the README, in order,
// against the demo database and checks the documented answer byte for byte.
func TestREADMEExamples(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	pair := regexp.MustCompile("(?s)```sh\ncurl -s http://127.0.0.1:3000(/\\S+) \\\\\n  -d '([^']*)'\n```\n```json\n(.*?)\n```")
	examples := pair.FindAllSubmatch(readme, -1)
	if len(examples) < 9 {
		t.Fatalf("found %d examples in the README", len(examples))
	}
	e := demoEnv(t, gateway.Config{})
	for _, ex := range examples {
		p, body, want := string(ex[1]), string(ex[2]), string(ex[3])
		if r := e.post(t, p, body); r.Raw != want {
			t.Errorf("POST %s %s\n got  %s\n want %s", p, body, r.Raw, want)
		}
	}
}
