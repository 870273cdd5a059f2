package firebird

import (
	"strings"
	"testing"

	"github.com/erp-gateway/gateway/shared/record"
)

// TestKeptCode: which columns a block keeps as text.
func TestKeptCode(t *testing.T) {
	tests := []struct {
		name                             string
		fieldType, scale, charset, chars int64
		want                             byte
	}{
		{"INTEGER", 8, 0, 0, 0, keptInteger},
		{"NUMERIC(18,4)", 16, -4, 0, 0, keptDecimal},
		{"NUMERIC(18,6)", 16, -6, 0, 0, keptDecimal},
		{"NUMERIC(18,7): the driver may write it in scientific notation", 16, -7, 0, 0, 0},
		{"INT128", 26, 0, 0, 0, 0},
		{"DOUBLE PRECISION", 27, 0, 0, 0, 0},
		{"FLOAT", 10, 0, 0, 0, 0},
		{"BLOB", 261, 0, 4, 0, 0},
		{"TIMESTAMP WITH TIME ZONE", 29, 0, 0, 0, 0},
		{"DATE", 12, 0, 0, 0, keptDate},
		{"TIME", 13, 0, 0, 0, keptTime},
		{"TIMESTAMP", 35, 0, 0, 0, keptTimestamp},
		{"BOOLEAN", 23, 0, 0, 0, keptBoolean},
		{"CHAR(10) UTF8", 14, 0, 4, 10, keptChar},
		{"VARCHAR(10) WIN1252", 37, 0, 53, 10, keptText},
		{"VARCHAR(10) NONE", 37, 0, 0, 10, 0},
		{"VARCHAR(10) OCTETS", 37, 0, 1, 10, 0},
		{"VARCHAR(8185) UTF8", 37, 0, 4, textCharsMax, keptText},
		{"VARCHAR(8186) UTF8", 37, 0, 4, textCharsMax + 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := keptCode(tt.fieldType, tt.scale, tt.charset, tt.chars); got != tt.want {
				t.Fatalf("%q, want %q", got, tt.want)
			}
		})
	}
}

// TestKeptHeader: an answer is kept as values only when every column's can
// be, and its names are ASCII.
func TestKeptHeader(t *testing.T) {
	tests := []struct {
		name string
		cols []param
		want string
		ok   bool
	}{
		{"none", nil, keptMark, true},
		{"two", []param{{name: "CODIGO", kept: keptText}, {name: "it's", kept: keptInteger}}, "K1;t6:CODIGOi4:it's", true},
		{"a DOUBLE", []param{{name: "CODIGO", kept: keptText}, {name: "D"}}, "", false},
		{"a name not in ASCII", []param{{name: "AÑO", kept: keptInteger}}, "", false},
		{"too many", slicesRepeat(param{name: strings.Repeat("C", 63), kept: keptInteger}, 40), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := keptHeader(tt.cols)
			if ok != tt.ok || (ok && got != tt.want) {
				t.Fatalf("%q %v, want %q %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func slicesRepeat(p param, n int) []param {
	out := make([]param, n)
	for i := range out {
		out[i] = p
	}
	return out
}

// TestReplayKept: a kept answer encodes as the driver's values of its
// server text would; a damaged one is an error, never a panic or a partial
// answer.
func TestReplayKept(t *testing.T) {
	tests := []struct {
		name, kept, want string
		bad              bool
	}{
		{"no rows", "K1;t6:CODIGO", `[]`, false},
		{"every code", "K1;t1:Tc1:Ci1:In1:Nd1:Dh1:Hs1:Sb1:B" + "2:a\"4:x   2:-74:-0.510:2024-02-2913:13:14:15.123024:2024-02-29 13:14:15.12344:TRUE" + "--------",
			`[{"T":"a\"","C":"x","I":-7,"N":-0.5,"D":"2024-02-29","H":"13:14:15.123","S":"2024-02-29T13:14:15.1234","B":true},` +
				`{"T":null,"C":null,"I":null,"N":null,"D":null,"H":null,"S":null,"B":null}]`, false},
		{"empty text", "K1;t1:T0:", `[{"T":""}]`, false},
		{"a length past the end", "K1;t1:T9:ab", "", true},
		{"a row cut short", "K1;t1:Ti1:I1:a", "", true},
		{"not a number", "K1;i1:I1:x", "", true},
		{"an unknown code", "K1;z1:Z", "", true},
		{"a name missing", "K1;t", "", true},
		{"a negative length", "K1;t1:T-1:", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := record.NewEncoder("", record.Limits{})
			err := replayKept([]byte(tt.kept), out)
			if tt.bad {
				if err == nil {
					t.Fatalf("no error; answer %s", out.Finish(""))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(out.Finish("")); got != tt.want {
				t.Fatalf("\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func FuzzReplayKept(f *testing.F) {
	f.Add([]byte("K1;t6:CODIGOi5:VECES3:abc1:1"))
	f.Add([]byte("K1;s1:S24:2024-02-29 13:14:15.1234-"))
	f.Fuzz(func(t *testing.T, kept []byte) {
		out := record.NewEncoder("", record.Limits{MaxBytes: 1 << 20})
		_ = replayKept(append([]byte(keptMark), kept...), out)
	})
}
