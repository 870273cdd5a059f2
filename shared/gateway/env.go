package gateway

import (
	"fmt"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/settings"
)

// NewConfig is the Config of the settings every entry point shares (README,
// "Configuration"); what only some serve (OpenAPI, streaming, metrics) each
// adds.
func NewConfig(s settings.Settings) Config {
	return Config{
		Class:         s.Class,
		ErrorPrefix:   s.ErrorPrefix,
		Timeout:       s.DBTimeout,
		MaxBody:       int64(s.MaxBody),
		BatchMax:      s.BatchMax,
		BatchBody:     int64(s.BatchBody),
		BatchTimeout:  s.BatchTimeout,
		MaxAnswer:     s.MaxAnswer,
		StreamTimeout: s.StreamTimeout,
		KeyTTL:        s.IdempotencyTTL,
	}
}

// LoadCatalog reads the catalog file at path, or returns the specification's
// operations when path is empty.
func LoadCatalog(path string) (*catalog.Catalog, error) {
	if path == "" {
		return catalog.Default(), nil
	}
	c, err := catalog.LoadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", settings.EnvCatalog, err)
	}
	return c, nil
}
