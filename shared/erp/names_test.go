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

func TestRepeated(t *testing.T) {
	for _, tt := range []struct {
		obj  string
		fold bool
		want string
	}{
		{`{"a":1,"b":{"a":2}}`, false, ""},
		{`{"a":1,"a":2}`, false, "a"},
		{`{"a":1,"A":2}`, false, ""},
		{`{"a":1,"A":2}`, true, "A"},
		{` {"a":[1,{"a":1}],"b":"a"} `, true, ""},
		{`[1,1]`, true, ""},
		{`{"a":`, true, ""},
	} {
		if got := Repeated([]byte(tt.obj), tt.fold); got != tt.want {
			t.Errorf("Repeated(%s, %v) = %q, want %q", tt.obj, tt.fold, got, tt.want)
		}
	}
}
