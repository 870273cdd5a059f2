package firebird_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/calls"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/record"
	"github.com/erp-gateway/gateway/shared/tally"
)

// TestBlobsInTheRowAnswerAsPlainOnes: a read with its BLOBs cast into the
// row answers byte for byte as the plain SELECT of the same procedure, whose
// BLOBs are read as BLOBs: text BLOBs in UTF8, in WIN1252 and in NONE, a
// binary one, NULL and empty ones, and lengths on both sides of what the row
// holds; on connections in UTF8 (however its name is written), WIN1252 and
// NONE, and in a WIN1252 database. The first read prepares two statements
// (the plain one, described, then the one it runs), the next none.
func TestBlobsInTheRowAnswerAsPlainOnes(t *testing.T) {
	demo := fbtest.Demo(t)
	fbtest.Setup(t, demo,
		`CREATE OR ALTER PROCEDURE REST_TEST_INLINE (P_I INTEGER)
		RETURNS (I INTEGER, U BLOB SUB_TYPE TEXT CHARACTER SET UTF8, W BLOB SUB_TYPE TEXT CHARACTER SET WIN1252,
			N BLOB SUB_TYPE TEXT CHARACTER SET NONE, B BLOB SUB_TYPE BINARY, V VARCHAR(20) CHARACTER SET UTF8)
		AS
		DECLARE L INTEGER;
		DECLARE K INTEGER;
		BEGIN
			I = 0;
			WHILE (I < 11) DO BEGIN
				L = DECODE(I, 0, 0, 1, 1, 2, 5000, 3, 5318, 4, 5319, 5, 6000, 6, 10700, 7, 21272, 8, 21273, 9, 40000, 0);
				U = ''; W = ''; B = CAST('' AS BLOB SUB_TYPE BINARY); N = 'plain ' || I;
				K = 0;
				WHILE (K < L) DO BEGIN
					U = U || LPAD('', MINVALUE(1000, L - K), 'ñ');
					W = W || LPAD('', MINVALUE(1000, L - K), 'é');
					B = B || LPAD('', MINVALUE(1000, L - K), 'z');
					K = K + 1000;
				END
				IF (I = 10) THEN BEGIN U = NULL; W = NULL; N = NULL; B = NULL; END
				V = 'fila ' || I;
				IF (P_I IS NULL OR P_I = I) THEN SUSPEND;
				I = I + 1;
			END
		END`,
		`GRANT EXECUTE ON PROCEDURE REST_TEST_INLINE TO GATEWAY`)
	none, win1252, lower := demo, demo, demo
	none.Charset, win1252.Charset, lower.Charset = "NONE", "WIN1252", "utf8"
	tests := []struct {
		name      string
		conn      erp.Connection
		procedure string
		args      []any
	}{
		{"every row, UTF8", demo, "REST_TEST_INLINE", []any{nil}},
		{"one row, its BLOBs the longest the row holds", demo, "REST_TEST_INLINE", []any{3}},
		{"every row, utf8", lower, "REST_TEST_INLINE", []any{nil}},
		{"every row, WIN1252", win1252, "REST_TEST_INLINE", []any{nil}},
		{"every row, NONE", none, "REST_TEST_INLINE", []any{nil}},
		{"Get_Referencias", demo, "REST_SELECT_REFERENCIA", []any{"REF0001"}},
		{"Get_Referencias, WIN1252 database", fbtest.Other(t), "REST_SELECT_REFERENCIA", []any{"PRD0001"}},
	}
	answers := make(map[string]string)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pools := firebird.NewPools(firebird.Options{MaxConns: 1})
			defer pools.Close()
			target := erp.Target{Instance: "x", Connection: tt.conn}
			var counts tally.Counts
			ctx := tally.With(context.Background(), &counts)
			read := func(do func(*firebird.Session, *record.Encoder) error) string {
				t.Helper()
				out := record.NewEncoder("", "", record.Limits{})
				ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				err := pools.Transact(ctx, target, calls.ReadOnly, out, func(ctx context.Context, tx calls.Tx) error {
					return do(tx.(*firebird.Session), out)
				})
				if err != nil {
					t.Fatal(err)
				}
				return string(out.Finish())
			}
			inRow := func(s *firebird.Session, out *record.Encoder) error {
				return s.Read(ctx, tt.procedure, tt.args, out)
			}
			plain := fmt.Sprintf("SELECT * FROM %s(?)", tt.procedure)
			asBlobs := func(s *firebird.Session, out *record.Encoder) error {
				_, err := s.Query(ctx, plain, tt.args, out, 0, false)
				return err
			}
			var got []string
			for i, prepares := range []int64{2, 0} {
				before := counts.Get(tally.StatementPrepares)
				got = append(got, read(inRow))
				if n := counts.Get(tally.StatementPrepares) - before; n != prepares {
					t.Errorf("read %d prepared %d statements, want %d", i, n, prepares)
				}
			}
			want := read(asBlobs)
			answers[tt.name] = want
			for i := range got {
				if got[i] != want {
					t.Fatalf("read %d:\n%.3000s\nas BLOBs:\n%.3000s", i, got[i], want)
				}
			}
		})
	}
	if answers["every row, utf8"] != answers["every row, UTF8"] {
		t.Errorf("a connection in utf8 answered\n%.1000s\nin UTF8\n%.1000s", answers["every row, utf8"], answers["every row, UTF8"])
	}
}
