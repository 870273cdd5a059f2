package firebird

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/nakagami/firebirdsql"
)

// TestUnblock: the position the block adds to a status vector is removed,
// as the server sent the vectors (TestIdempotencyKeys compares whole
// answers).
func TestUnblock(t *testing.T) {
	tests := []struct {
		name       string
		codes      []int
		params     [][]string
		message    string
		wantParams [][]string
		wantMsg    string
	}{
		{"an exception of the procedure",
			[]int{firebirdsql.ISCExcept, 335544382, 335544382, firebirdsql.ISCStackTrace},
			[][]string{{"17"}, {"E_TEST_PAGO"}, {"valor negativo"}, {"At procedure 'REST_TEST_PAGAR' line: 2, col: 26\nAt block line: 4, col: 3"}},
			"exception 17\nE_TEST_PAGO\nvalor negativo\nAt procedure 'REST_TEST_PAGAR' line: 2, col: 26\nAt block line: 4, col: 3\n",
			[][]string{{"17"}, {"E_TEST_PAGO"}, {"valor negativo"}, {"At procedure 'REST_TEST_PAGAR' line: 2, col: 26"}},
			"exception 17\nE_TEST_PAGO\nvalor negativo\nAt procedure 'REST_TEST_PAGAR' line: 2, col: 26\n"},
		{"a constraint of the block itself",
			[]int{firebirdsql.ISCUniqueKeyViolation, 335545072, firebirdsql.ISCStackTrace},
			[][]string{{"PK_T", "T"}, {`("ID" = 1)`}, {"At block line: 3, col: 3"}},
			"violation of PRIMARY or UNIQUE KEY constraint \"PK_T\" on table \"T\"\nProblematic key value is (\"ID\" = 1)\nAt block line: 3, col: 3\n",
			[][]string{{"PK_T", "T"}, {`("ID" = 1)`}, {""}},
			"violation of PRIMARY or UNIQUE KEY constraint \"PK_T\" on table \"T\"\nProblematic key value is (\"ID\" = 1)\n"},
		{"a block the procedure ran: its position is the procedure's",
			[]int{firebirdsql.ISCExcept, 335544382, 335544382, firebirdsql.ISCStackTrace},
			[][]string{{"1"}, {"E_REST"}, {"dyn 4"}, {"At block line: 1, col: 38\nAt procedure 'REST_SET_ESBLOCK' line: 4, col: 3\nAt block line: 5, col: 3"}},
			"exception 1\nE_REST\ndyn 4\nAt block line: 1, col: 38\nAt procedure 'REST_SET_ESBLOCK' line: 4, col: 3\nAt block line: 5, col: 3\n",
			[][]string{{"1"}, {"E_REST"}, {"dyn 4"}, {"At block line: 1, col: 38\nAt procedure 'REST_SET_ESBLOCK' line: 4, col: 3"}},
			"exception 1\nE_REST\ndyn 4\nAt block line: 1, col: 38\nAt procedure 'REST_SET_ESBLOCK' line: 4, col: 3\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &firebirdsql.FbError{GDSCodes: tt.codes, Params: tt.params, Message: tt.message}
			err := unblock(fmt.Errorf("wrapped: %w", fb))
			if !errors.Is(err, fb) {
				t.Fatalf("the error changed: %v", err)
			}
			if fb.Message != tt.wantMsg || !slices.EqualFunc(fb.Params, tt.wantParams, slices.Equal) {
				t.Fatalf("%q %q, want %q %q", fb.Params, fb.Message, tt.wantParams, tt.wantMsg)
			}
		})
	}
}
