// Command openapi writes the OpenAPI 3.1 document of a catalog, with the
// answers' columns as an instance's database declares them and the README's
// examples. `make openapi` writes infra/openapi.json from the demo ERP.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/openapi"
	"github.com/erp-gateway/gateway/shared/tenants"
)

type options struct {
	instances, instance, catalog, readme, class, server, out string
}

func main() {
	var o options
	flag.StringVar(&o.instances, "instances", "infra/instances.demo.json", "instances file")
	flag.StringVar(&o.instance, "instance", "demo", "instance whose database declares the answers' columns")
	flag.StringVar(&o.catalog, "catalog", "infra/catalog.demo.json", "catalog file")
	flag.StringVar(&o.readme, "readme", "README.md,infra/docs/catalog.md", "comma-separated documents whose examples the document shows: the README and the guide's pages that hold curl examples (empty: none)")
	flag.StringVar(&o.class, "class", gateway.DefaultClass, "interface-class path segment")
	flag.StringVar(&o.server, "server", "http://127.0.0.1:3000", "base URL")
	flag.StringVar(&o.out, "out", "infra/openapi.json", "file to write (- for standard output)")
	flag.Parse()
	// flag stops at the first word that is not a flag, and would drop
	// the flags after it without a word.
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "openapi: %q is not a flag: every value follows its flag\n", flag.Arg(0))
		os.Exit(2)
	}
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "openapi:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	instances, err := tenants.LoadFile(o.instances)
	if err != nil {
		return err
	}
	inst, err := instances.Lookup(ctx, o.instance)
	if err != nil {
		return fmt.Errorf("instance %s: %w", o.instance, err)
	}
	doc, err := document(ctx, o, inst.Connection)
	if err != nil {
		return err
	}
	if o.out == "-" {
		_, err = os.Stdout.Write(doc)
		return err
	}
	return os.WriteFile(o.out, doc, 0o644)
}

// document is what run writes; the test that holds infra/openapi.json to
// the catalog calls it with the test database.
func document(ctx context.Context, o options, db erp.Connection) ([]byte, error) {
	cat, err := catalog.LoadFile(o.catalog)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	procs, err := firebird.Describe(ctx, db, cat.Procedures())
	if err != nil {
		return nil, fmt.Errorf("reading the database's procedures: %w", err)
	}
	in := openapi.Input{Catalog: cat, Procedures: procs, Class: o.class, Server: o.server, BatchMax: gateway.DefaultBatchMax}
	if o.readme != "" {
		var readme []byte
		for _, f := range strings.Split(o.readme, ",") {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			readme = append(append(readme, data...), '\n')
		}
		in.Examples = openapi.ExamplesFromREADME(readme)
	}
	return openapi.Document(in)
}
