package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/idempotency"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// errFindings makes the doctor's exit status 1 when a finding is fatal.
var errFindings = errors.New("the catalog and a database disagree (fatal findings above)")

func doctor(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	instancesPath := fs.String("instances", "infra/instances.demo.json", "instances file")
	catalogPath := fs.String("catalog", "", "catalog file (default: the specification's operations)")
	if err := parse(fs, args); err != nil {
		return err
	}
	instances, err := tenants.LoadFile(*instancesPath)
	if err != nil {
		return err
	}
	cat, which := catalog.Default(), "the specification's built-in catalog"
	if *catalogPath != "" {
		if cat, err = catalog.LoadFile(*catalogPath); err != nil {
			return err
		}
		which = "the catalog " + *catalogPath
	}
	if len(instances.Names()) == 0 {
		return fmt.Errorf("doctor: %s names no instance: there is nothing to check", *instancesPath)
	}
	fmt.Fprintf(stdout, "checking %s\n", which)
	// What the health check reads, the same way: the procedures, the
	// orphan hunt's grant and, where keys are on, the key table, on one
	// attachment.
	pools := firebird.NewPools(firebird.Options{})
	defer pools.Close()
	db := idempotency.New(pools, 0)
	fatal := false
	for _, name := range instances.Names() {
		inst, err := instances.Lookup(ctx, name)
		if err != nil {
			return err
		}
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		procs, problems, err := db.Describe(dctx, erp.Target{Instance: name, Connection: inst.Connection}, cat.Procedures(), inst.Idempotency)
		cancel()
		if err != nil {
			fmt.Fprintf(stdout, "%s: cannot read the database: %v\n", name, err)
			fatal = true
			continue
		}
		diagnose := cat.Diagnose
		if inst.ReadOnly {
			diagnose = cat.DiagnoseReader
		}
		findings := append(diagnose(procs, inst.Connection.User), problems...)
		if len(findings) == 0 {
			fmt.Fprintf(stdout, "%s: ok (%d operations, %d procedures)\n", name, len(cat.Claves()), len(cat.Procedures()))
		}
		for _, f := range findings {
			level := "warning"
			if f.Fatal {
				level, fatal = "FATAL", true
			}
			fmt.Fprintf(stdout, "%s: %s: %s\n", name, level, f.Text)
		}
	}
	if fatal {
		return errFindings
	}
	return nil
}
