package record

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

func TestAppendJSON(t *testing.T) {
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
			got := string(AppendJSON(nil, Set{Columns: []Column{{Name: "V", Kind: tt.kind}}, Rows: [][]any{{tt.v}}}))
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

func TestAppendJSONKeepsColumnOrder(t *testing.T) {
	s := Set{Columns: []Column{{Name: "Z"}, {Name: "A"}, {Name: "M"}}, Rows: [][]any{{"1", "2", "3"}, {"4", nil, "6"}}}
	if got := string(AppendJSON(nil, s)); got != `[{"Z":"1","A":"2","M":"3"},{"Z":"4","A":null,"M":"6"}]` {
		t.Fatal(got)
	}
	if got := string(AppendJSON(nil, Set{})); got != `[]` {
		t.Fatal(got)
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
