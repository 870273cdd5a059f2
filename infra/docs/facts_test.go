package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/idempotency"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// TestTheGuidesNumbersAreTheCodes: the defaults and bounds the guide and
// the README state in words are the constants the code runs with. Each
// fact is a phrase of a page, a regular expression with one group, the
// number; a space matches any run of white space (the pages wrap their
// lines).
func TestTheGuidesNumbersAreTheCodes(t *testing.T) {
	facts := []struct {
		page, phrase, want string
	}{
		{"infra/docs/answers.md", "`max_rows`\\*\\* \\(default ([0-9,]+) rows\\)", thousands(catalog.DefaultMaxRows)},
		{"infra/docs/catalog.md", "`max_rows` \\(default ([0-9,]+)\\)", thousands(catalog.DefaultMaxRows)},
		{"infra/docs/catalog.md", "`procedure` \\(a plain identifier of at most ([0-9]+) characters", strconv.Itoa(catalog.MaxProcedureName)},
		{"infra/docs/catalog.md", "a column named `([A-Z$]+)…`", catalog.BlockNames},
		{"infra/docs/operating.md", "`max_rows` \\(([0-9,]+) by", thousands(catalog.DefaultMaxRows)},
		{"infra/docs/answers.md", "A kept answer is at most ([0-9]+) MiB", strconv.Itoa(idempotency.KeptMax >> 20)},
		{"README.md", "larger than a key keeps \\(([0-9]+) MiB\\)", strconv.Itoa(idempotency.KeptMax >> 20)},
		{"README.md", "`GATEWAY_BATCH_BODY` \\(([0-9]+) MiB\\)", strconv.Itoa(gateway.DefaultBatchBody >> 20)},
		{"infra/docs/internals.md", "After ([0-9]+) such calls in a row", strconv.Itoa(gateway.DefaultFailures)},
		{"infra/docs/internals.md", "for a cool-down of ([0-9.]+) s", number(gateway.DefaultCoolDown.Seconds())},
		{"infra/docs/internals.md", "once it is silent for ([0-9.]+) s", number(gateway.DefaultProbeSilence.Seconds())},
		{"infra/docs/internals.md", "instances have a breaker \\(a success forgets it\\), at most ([0-9,]+)", thousands(gateway.DefaultMaxInstances)},
		{"infra/docs/configuration.md", "`GATEWAY_SECRET_TTL` \\(([0-9]+) minutes\\)", number(tenants.DefaultTTL.Minutes())},
		{"infra/docs/configuration.md", "The cache holds at most ([0-9,]+) names", thousands(tenants.DefaultMaxEntries)},
		{"infra/docs/configuration.md", "is remembered for ([0-9]+) s", number(tenants.DefaultNegativeTTL.Seconds())},
		{"infra/docs/configuration.md", "it is asked again after ([0-9]+) s, then", number(tenants.DefaultColdRetry.Seconds())},
		{"infra/docs/configuration.md", "keeps serving for up to (an hour) past its TTL", span(tenants.DefaultStaleFor)},
	}
	for _, f := range facts {
		b, err := os.ReadFile(filepath.Join(root, f.page))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(strings.ReplaceAll(f.phrase, " ", `\s+`)).FindSubmatch(b)
		switch {
		case m == nil:
			t.Errorf("%s: no phrase %q", f.page, f.phrase)
		case string(m[1]) != f.want:
			t.Errorf("%s: %q says %q, the code %q", f.page, f.phrase, m[1], f.want)
		}
	}
}

// thousands writes n as the pages do: 1,000,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// number writes a count as the pages do: 0.5, 1, 30.
func number(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// span writes a duration the pages write in words.
func span(d time.Duration) string {
	if d == time.Hour {
		return "an hour"
	}
	return d.String()
}
