package erp

import (
	"strings"
	"testing"
)

func TestValidInstanceName(t *testing.T) {
	for name, want := range map[string]bool{
		"demo": true, "Cliente_01-b": true, strings.Repeat("a", 64): true,
		"": false, strings.Repeat("a", 65): false, "de.mo": false, "a/b": false, "ñandú": false, "a b": false,
	} {
		if got := ValidInstanceName(name); got != want {
			t.Errorf("ValidInstanceName(%q) = %v", name, got)
		}
	}
}

func TestValidTokenID(t *testing.T) {
	for id, want := range map[string]bool{
		strings.Repeat("0a", 16): true,
		strings.Repeat("0A", 16): false, strings.Repeat("0a", 15): false, strings.Repeat("0a", 17): false, "": false,
	} {
		if got := ValidTokenID(id); got != want {
			t.Errorf("ValidTokenID(%q) = %v", id, got)
		}
	}
}
