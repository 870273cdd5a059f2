package gateway

import (
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/erp-gateway/gateway/shared/catalog"
)

// ConfigFromEnv reads the settings every entry point shares (README,
// "Configuration"). getenv is os.Getenv in main and a map in tests.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	cfg := Config{
		Class:       getenv("GATEWAY_CLASS"),
		ErrorPrefix: getenv("GATEWAY_ERROR_PREFIX"),
	}
	if v := getenv("GATEWAY_DB_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return Config{}, fmt.Errorf("GATEWAY_DB_TIMEOUT=%q: want a positive duration such as 8s", v)
		}
		cfg.Timeout = d
	}
	if v := getenv("GATEWAY_MAX_BODY"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return Config{}, fmt.Errorf("GATEWAY_MAX_BODY=%q: want a positive number of bytes", v)
		}
		cfg.MaxBody = n
	}
	if v := getenv("GATEWAY_MAX_ANSWER"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > DefaultMaxAnswer {
			return Config{}, fmt.Errorf("GATEWAY_MAX_ANSWER=%q: want a number of bytes up to %d", v, DefaultMaxAnswer)
		}
		cfg.MaxAnswer = n
	}
	if v := getenv("GATEWAY_STREAM_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return Config{}, fmt.Errorf("GATEWAY_STREAM_TIMEOUT=%q: want a positive duration such as 5m", v)
		}
		cfg.StreamTimeout = d
	}
	if v := getenv("GATEWAY_IDEMPOTENCY_TTL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Minute {
			return Config{}, fmt.Errorf("GATEWAY_IDEMPOTENCY_TTL=%q: want a duration of a minute or more, such as 24h", v)
		}
		cfg.KeyTTL = d
	}
	return cfg, nil
}

// CatalogFromEnv reads the catalog file GATEWAY_CATALOG names, or returns the
// specification's operations when it names none.
func CatalogFromEnv(getenv func(string) string) (*catalog.Catalog, error) {
	path := getenv("GATEWAY_CATALOG")
	if path == "" {
		return catalog.Default(), nil
	}
	c, err := catalog.LoadFile(path)
	if err != nil {
		return nil, fmt.Errorf("GATEWAY_CATALOG: %w", err)
	}
	return c, nil
}

// LogLevel maps LOG_LEVEL (debug, info, warn, error; the Lambda runtime's
// upper-case names too) to a slog level; info when unset or unknown.
func LogLevel(v string) slog.Level {
	var l slog.Level
	if l.UnmarshalText([]byte(v)) != nil {
		return slog.LevelInfo
	}
	return l
}
