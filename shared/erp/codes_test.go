package erp

import (
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
)

// outcomes is every outcome class.
var outcomes = []Outcome{OutcomeOK, OutcomeRefusedByDB, OutcomeClientError, OutcomeUnauthorized, OutcomeUnavailable, OutcomeInternal, OutcomeCut}

func TestCodesAreOneTable(t *testing.T) {
	seen := map[Code]bool{}
	for i, info := range Codes() {
		if seen[info.Code] {
			t.Errorf("%d has two entries", info.Code)
		}
		seen[info.Code] = true
		if i > 0 && info.Code < Codes()[i-1].Code {
			t.Errorf("%d is out of order", info.Code)
		}
		if http.StatusText(info.Status) == "" || info.Meaning == "" || info.Scope == 0 || !slices.Contains(outcomes, info.Outcome) {
			t.Errorf("%d: incomplete entry %+v", info.Code, info)
		}
		if got := info.Code.Info(); got != info {
			t.Errorf("%d: Info() = %+v", info.Code, got)
		}
		// Failure is never answered 200: clients that check the status
		// must see it (the database's refusal is code 0). A batch's
		// elements are answered inside its 200, as a refused single call.
		if (info.Code == CodeOK || info.Scope == ScopeBatch) != (info.Status == http.StatusOK) {
			t.Errorf("%d answers %d", info.Code, info.Status)
		}
	}
	if got := Code(1104).Info(); got.Status != http.StatusInternalServerError || got.Code != 1104 {
		t.Errorf("an unknown code is answered %+v, want a bug", got)
	}
}

// TestCodesInREADME: the README's table of error codes has a row for every
// code, with its HTTP status, and none for a code that does not exist.
func TestCodesInREADME(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := regexp.MustCompile(`(?s)\n## Error codes\n(.*?)\n## `).FindSubmatch(readme)
	if section == nil {
		t.Fatal(`README has no "## Error codes" section`)
	}
	rows := regexp.MustCompile(`(?m)^\| (\d+) \| (\d+) \|`).FindAllSubmatch(section[1], -1)
	documented := map[Code]int{}
	for _, r := range rows {
		code, _ := strconv.Atoi(string(r[1]))
		status, _ := strconv.Atoi(string(r[2]))
		documented[Code(code)] = status
	}
	for _, info := range Codes() {
		status, ok := documented[info.Code]
		switch {
		case !ok:
			t.Errorf("README has no row for %d", info.Code)
		case status != info.Status:
			t.Errorf("README says %d answers HTTP %d; the code answers %d", info.Code, status, info.Status)
		}
		delete(documented, info.Code)
	}
	for code := range documented {
		t.Errorf("README has a row for %d, which is no code", code)
	}
}
