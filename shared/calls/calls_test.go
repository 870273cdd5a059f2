package calls

import "testing"

func TestQuote(t *testing.T) {
	for name, want := range map[string]string{"RDB$12": `"RDB$12"`, "CODIGO": `"CODIGO"`, "DATE": `"DATE"`, "valor total": `"valor total"`, `a"b`: `"a""b"`, "it's": `"it's"`} {
		if got := Quote(name); got != want {
			t.Errorf("Quote(%q) = %s, want %s", name, got, want)
		}
	}
}
