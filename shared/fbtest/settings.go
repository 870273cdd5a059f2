package fbtest

import (
	"testing"

	"github.com/erp-gateway/gateway/shared/settings"
)

// Settings reads the settings of the environment env holds, as a
// function binary reads its own.
func Settings(t testing.TB, env map[string]string) settings.Settings {
	t.Helper()
	s, err := settings.Read(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return s
}
