package calls

import "testing"

func TestQuote(t *testing.T) {
	for name, want := range map[string]string{"RDB$12": "RDB$12", `a"b`: `"a""b"`, "CODIGO": "CODIGO", "it's": `"it's"`} {
		if got := Quote(name); got != want {
			t.Errorf("Quote(%q) = %s, want %s", name, got, want)
		}
	}
}
