package lambdafn_test

import (
	"testing"

	"github.com/erp-gateway/gateway/shared/access"
	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/settings"
)

// TestSettingsDefaultsAreThePackagesOwn: the defaults the settings give
// (the README's) are those the packages take for a zero value, so a Config
// or Options built without the settings (tests, tools) behaves as the
// binaries do.
func TestSettingsDefaultsAreThePackagesOwn(t *testing.T) {
	s, err := settings.Read(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		got, want any
	}{
		{settings.EnvClass, s.Class, gateway.DefaultClass},
		{settings.EnvErrorPrefix, s.ErrorPrefix, gateway.DefaultErrorPrefix},
		{settings.EnvDBTimeout, s.DBTimeout, gateway.DefaultTimeout},
		{settings.EnvMaxBody, s.MaxBody, gateway.DefaultMaxBody},
		{settings.EnvBatchMax, s.BatchMax, gateway.DefaultBatchMax},
		{settings.EnvBatchBody, s.BatchBody, gateway.DefaultBatchBody},
		{settings.EnvBatchTimeout, s.BatchTimeout, gateway.DefaultBatchTimeout},
		{settings.EnvMaxAnswer, s.MaxAnswer, gateway.DefaultMaxAnswer},
		{settings.EnvStreamTimeout, s.StreamTimeout, gateway.DefaultStreamTimeout},
		{settings.EnvIdempotencyTTL, s.IdempotencyTTL, gateway.DefaultKeyTTL},
		{settings.EnvAccessRefresh, s.AccessRefresh, access.DefaultEvery},
		{settings.EnvAccessMaxAge, s.AccessMaxAge, access.DefaultMaxAge},
		{settings.EnvStmtMaxAge, s.StmtMaxAge, firebird.DefaultStmtMaxAge},
		{settings.EnvConnMaxIdle, s.ConnMaxIdle, firebird.DefaultConnMaxIdle},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s defaults to %v; the package's own default is %v", tt.name, tt.got, tt.want)
		}
	}
}
