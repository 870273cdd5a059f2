package settings

import (
	"log/slog"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestSettingsInREADME: the guide's table of variables (infra/docs/configuration.md)
// has a row for every setting, with its default, and none for a variable no
// binary reads.
func TestSettingsInREADME(t *testing.T) {
	readme, err := os.ReadFile("../../infra/docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	section := regexp.MustCompile(`(?s)\n## Configuration\n.*?\n\| variable \| default \| meaning \|\n\|---\|---\|---\|\n(.*?)\n\n`).FindSubmatch(readme)
	if section == nil {
		t.Fatal(`infra/docs/configuration.md's "## Configuration" has no table of variables`)
	}
	documented := map[string]string{}
	for _, line := range strings.Split(string(section[1]), "\n") {
		r := regexp.MustCompile("^\\| `([A-Z_]+)` \\| (`[^`]*`|empty) \\| ").FindStringSubmatch(line)
		if r == nil {
			t.Errorf("a row that is not | `NAME` | `default` or empty | meaning |: %s", line)
			continue
		}
		documented[r[1]] = strings.Trim(strings.TrimPrefix(r[2], "empty"), "`")
	}
	for _, e := range table(new(Settings)) {
		def, ok := documented[e.name]
		switch {
		case !ok:
			t.Errorf("README has no row for %s", e.name)
		case def != e.def:
			t.Errorf("README says %s defaults to %q; it defaults to %q", e.name, def, e.def)
		}
		delete(documented, e.name)
	}
	for name := range documented {
		t.Errorf("README has a row for %s, which nothing reads", name)
	}
}

// TestTableNamesEveryFieldOnce: as many settings as fields, each name once.
func TestTableNamesEveryFieldOnce(t *testing.T) {
	rows := table(new(Settings))
	if n := reflect.TypeFor[Settings]().NumField(); len(rows) != n {
		t.Errorf("%d settings for %d fields", len(rows), n)
	}
	seen := map[string]bool{}
	for _, e := range rows {
		if seen[e.name] {
			t.Errorf("%s twice", e.name)
		}
		seen[e.name] = true
	}
}

func TestRead(t *testing.T) {
	defaults := Settings{
		Class: "TServiceRestInterface", ErrorPrefix: "[firebirdsql]",
		DBTimeout: 10 * time.Second, StmtMaxAge: 60 * time.Second, ConnMaxIdle: 240 * time.Second,
		MaxBody: 65536, BatchMax: 100, BatchBody: 1 << 20, BatchTimeout: 22 * time.Second, MaxAnswer: 6275072, StreamTimeout: 5 * time.Minute, LogLevel: slog.LevelInfo,
		SecretTTL: 5 * time.Minute, AccessRefresh: 5 * time.Minute, AccessMaxAge: time.Hour,
		IdempotencyTTL: 24 * time.Hour, MetricsNamespace: "ErpGateway", LambdaLogLevel: slog.LevelInfo,
	}
	with := func(edit func(*Settings)) Settings {
		s := defaults
		edit(&s)
		return s
	}
	tests := []struct {
		name string
		env  map[string]string
		want Settings
	}{
		{"nothing set: the defaults", nil, defaults},
		{"set empty: the defaults", map[string]string{EnvDBTimeout: "", EnvClass: ""}, defaults},
		{"every form", map[string]string{
			EnvClass: "TVendor", EnvDBTimeout: "300ms", EnvMaxBody: "1024", EnvMaxAnswer: "6275072",
			EnvResponseStreaming: "true", EnvIdempotencyTTL: "1m", EnvCatalog: "c.json", EnvLogLevel: "debug",
			EnvHookEndpoint: "execute", EnvHookInstance: "demo_1",
		}, with(func(s *Settings) {
			s.Class, s.DBTimeout, s.MaxBody, s.MaxAnswer = "TVendor", 300*time.Millisecond, 1024, 6275072
			s.ResponseStreaming, s.IdempotencyTTL, s.Catalog, s.LogLevel = true, time.Minute, "c.json", slog.LevelDebug
			s.LambdaLogLevel, s.HookEndpoint, s.HookInstance = slog.LevelDebug, "execute", "demo_1"
		})},
		{"Lambda's level without the template's", map[string]string{"AWS_LAMBDA_LOG_LEVEL": "ERROR", EnvLogLevel: "debug"},
			with(func(s *Settings) { s.LambdaLogLevel, s.LogLevel = slog.LevelError, slog.LevelDebug })},
		{"the template's level first", map[string]string{EnvLambdaLogLevel: "WARN", "AWS_LAMBDA_LOG_LEVEL": "DEBUG"},
			with(func(s *Settings) { s.LambdaLogLevel = slog.LevelWarn })},
		{"Lambda's TRACE and FATAL", map[string]string{"AWS_LAMBDA_LOG_LEVEL": "TRACE", EnvLogLevel: "fatal"},
			with(func(s *Settings) { s.LambdaLogLevel, s.LogLevel = slog.LevelDebug, slog.LevelError })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Read(func(k string) string { return tt.env[k] })
			if err != nil || got != tt.want {
				t.Fatalf("got %+v (%v)\nwant %+v", got, err, tt.want)
			}
		})
	}
}

// TestReadRefuses: a wrong value names the variable, the value and the form
// wanted.
func TestReadRefuses(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{EnvDBTimeout: "8"}, `GATEWAY_DB_TIMEOUT="8": want a positive duration such as 8s`},
		{map[string]string{EnvStmtMaxAge: "-1s"}, `GATEWAY_STMT_MAX_AGE="-1s": want a positive duration such as 8s`},
		{map[string]string{EnvIdempotencyTTL: "59s"}, `GATEWAY_IDEMPOTENCY_TTL="59s": want a duration of 1m0s or more`},
		{map[string]string{EnvMaxBody: "64KiB"}, `GATEWAY_MAX_BODY="64KiB": want a positive number of bytes`},
		{map[string]string{EnvMaxBody: "0"}, `GATEWAY_MAX_BODY="0": want a positive number of bytes`},
		{map[string]string{EnvMaxAnswer: "6275073"}, `GATEWAY_MAX_ANSWER="6275073": want a number of bytes up to 6275072`},
		{map[string]string{EnvResponseStreaming: "yes"}, `GATEWAY_RESPONSE_STREAMING="yes": want true or false`},
		{map[string]string{EnvLogLevel: "verbose"}, `LOG_LEVEL="verbose": want debug, info, warn or error (or trace, fatal), in any case`},
		{map[string]string{"AWS_LAMBDA_LOG_LEVEL": "LOUD"}, `AWS_LAMBDA_LOG_LEVEL="LOUD": want debug, info, warn or error (or trace, fatal), in any case`},
		{map[string]string{EnvHookEndpoint: "bogus"}, `GATEWAY_HOOK_ENDPOINT="bogus": want executequery or execute`},
		{map[string]string{EnvHookInstance: "a b"}, `GATEWAY_HOOK_INSTANCE="a b": want an instance name (1 to 64 letters, digits, _ or -)`},
		{map[string]string{EnvAccessRefresh: "2h"}, `GATEWAY_ACCESS_MAX_AGE (1h0m0s) is shorter than GATEWAY_ACCESS_REFRESH (2h0m0s): every environment would refuse tokens between reads`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			s, err := Read(func(k string) string { return tt.env[k] })
			if err == nil || err.Error() != tt.want || s != (Settings{}) {
				t.Fatalf("got %+v, %v\nwant the error %s", s, err, tt.want)
			}
		})
	}
}
