package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/erp"
)

func TestEncoderValues(t *testing.T) {
	ts := time.Date(2024, 2, 29, 13, 14, 15, 123400000, time.Local)
	tests := []struct {
		name string
		kind Kind
		v    any
		want string
	}{
		{"null", Text, nil, `null`},
		{"empty string", Text, "", `""`},
		{"escapes", Text, "a\"b\\c\n\r\t\x01ñ", `"a\"b\\c\n\r\t\u0001ñ"`},
		{"invalid UTF-8", Text, "a\xffb", `"a\ufffdb"`},
		{"exact decimal", Decimal, "98765432109876.5432", `98765432109876.5432`},
		{"negative decimal", Decimal, "-0.50", `-0.50`},
		{"decimal the grammar refuses is quoted", Decimal, ".5", `".5"`},
		// The driver writes a NUMERIC under 1e-6 in scientific notation.
		{"zero of scale 8", Decimal, "0E-8", `0.00000000`},
		{"small decimal", Decimal, "1.2E-7", `0.00000012`},
		{"small negative decimal", Decimal, "-1.2345E-7", `-0.00000012345`},
		{"scientific of a whole number", Decimal, "1.5E+1", `15`},
		{"scientific with a positive exponent is quoted", Decimal, "5E+2", `"5E+2"`},
		{"not a number is quoted", Decimal, "xE-8", `"xE-8"`},
		{"integer", Integer, int64(-9223372036854775808), `-9223372036854775808`},
		{"double", Float64, 0.1, `0.1`},
		{"large double", Float64, 1e300, `1e+300`},
		{"float32 keeps its digits", Float32, float64(float32(0.1)), `0.1`},
		{"NaN", Float64, math.NaN(), `null`},
		{"bool", Boolean, true, `true`},
		{"date", Date, ts, `"2024-02-29"`},
		{"time", Time, ts, `"13:14:15.1234"`},
		{"timestamp", Timestamp, ts, `"2024-02-29T13:14:15.1234"`},
		{"whole-second timestamp", Timestamp, ts.Truncate(time.Second), `"2024-02-29T13:14:15"`},
		{"binary", Binary, []byte{1, 2, 255}, `"AQL/"`},
		{"text BLOB", Binary, "texto", `"texto"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(encode(t, Limits{}, []Column{{Name: "V", Kind: tt.kind}}, []any{tt.v}))
			want := `[{"V":` + tt.want + `}]`
			if got != want {
				t.Fatalf("got %s, want %s", got, want)
			}
			if !json.Valid([]byte(got)) {
				t.Fatalf("invalid JSON %s", got)
			}
		})
	}
}

// encode encodes rows with no prefix and no suffix.
func encode(t testing.TB, lim Limits, cols []Column, rows ...[]any) []byte {
	t.Helper()
	e := NewEncoder("", "", lim)
	e.Columns(cols)
	for _, r := range rows {
		if err := e.Row(r); err != nil {
			t.Fatal(err)
		}
	}
	return e.Finish()
}

func TestEncoderKeepsColumnOrder(t *testing.T) {
	cols := []Column{{Name: "Z"}, {Name: "A"}, {Name: "M"}}
	if got := string(encode(t, Limits{}, cols, []any{"1", "2", "3"}, []any{"4", nil, "6"})); got != `[{"Z":"1","A":"2","M":"3"},{"Z":"4","A":null,"M":"6"}]` {
		t.Fatal(got)
	}
	if got := string(encode(t, Limits{}, cols)); got != `[]` {
		t.Fatal(got)
	}
}

func TestEncoderLimits(t *testing.T) {
	cols := []Column{{Name: "V"}}
	row := []any{`"x"\`}
	tests := []struct {
		name    string
		lim     Limits
		fits    int // rows encoded before the limit
		wantErr error
	}{
		{"rows", Limits{MaxRows: 3}, 3, erp.ErrTooManyRows},
		// Each row's escaped quotes and backslash grow again when written
		// as a JSON string: counted as plain JSON text, five rows would fit.
		{"bytes count the JSON string form", Limits{MaxBytes: 100}, 3, erp.ErrAnswerTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewEncoder(`{"data":`, "}", tt.lim)
			e.Columns(cols)
			var err error
			for err == nil && e.Rows() < 1000 {
				err = e.Row(row)
			}
			if !errors.Is(err, tt.wantErr) || e.Rows() != tt.fits {
				t.Fatalf("stopped after %d rows with %v, want %d rows and %v", e.Rows(), err, tt.fits, tt.wantErr)
			}
			got := e.Finish()
			if !json.Valid(got) {
				t.Fatalf("the answer after the refused row is not JSON: %s", got)
			}
			if tt.lim.MaxBytes > 0 && StringSize(got) > tt.lim.MaxBytes {
				t.Fatalf("answer of %d bytes as a JSON string passes the limit %d", StringSize(got), tt.lim.MaxBytes)
			}
			e.Reset()
			if e.Rows() != 0 || string(e.Finish()) != `{"data":[]}` {
				t.Fatalf("Reset left %d rows", e.Rows())
			}
		})
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("ñ\"\\\x00\xff")
	f.Fuzz(func(t *testing.T, s string) {
		b := AppendString(nil, s)
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%q -> invalid JSON %s", s, b)
		}
	})
}

// StringSize must agree with what the Lambda runtime makes of a body:
// encoding/json with HTML escaping off (aws-lambda-go's default), or an
// answer could pass Lambda's limit unrefused, or be refused too early.
func FuzzStringSize(f *testing.F) {
	for _, s := range []string{"", `{"a":"<b>&\"\u0001"}`, "\u2028\u2029\b\f", "\xff\xfe", "ñ\x7f"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m bytes.Buffer
		enc := json.NewEncoder(&m)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(string(b)); err != nil {
			t.Fatal(err)
		}
		if got, want := StringSize(b), m.Len()-3; got != want { // quotes and newline
			t.Fatalf("StringSize(%q) = %d, encoding/json writes %d", b, got, want)
		}
	})
}

// TestAnswered: a value as its answer writes it, unquoted, for a reference
// to pass on.
func TestAnswered(t *testing.T) {
	day := time.Date(2018, 11, 4, 0, 30, 0, 500_000_000, time.UTC)
	tests := []struct {
		kind Kind
		v    any
		want string
		ok   bool
	}{
		{Decimal, "1.2E-7", "0.00000012", true},
		{Decimal, "-12.3400", "-12.3400", true},
		{Integer, int64(-7), "-7", true},
		{Float32, float64(float32(0.1)), "0.1", true},
		{Float64, 1e308, "1e+308", true},
		{Float64, math.NaN(), "", false},
		{Boolean, true, "true", true},
		{Date, day, "2018-11-04", true},
		{Time, day, "00:30:00.5", true},
		{Timestamp, day, "2018-11-04T00:30:00.5", true},
		{Binary, []byte{0, 0xff}, "AP8=", true},
		{Text, `"a\b"`, `"a\b"`, true},
		{Text, nil, "", false},
	}
	for _, tt := range tests {
		if got, ok := Answered(tt.kind, tt.v); got != tt.want || ok != tt.ok {
			t.Errorf("%v %#v: %q %v, want %q %v", tt.kind, tt.v, got, ok, tt.want, tt.ok)
		}
	}
}
