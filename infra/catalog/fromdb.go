package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/tenants"
)

func fromDB(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("from-db", flag.ContinueOnError)
	instancesPath := fs.String("instances", "infra/instances.demo.json", "instances file")
	name := fs.String("instance", "", "instance to read (may be left out when the file has one)")
	like := fs.String("procedures", `REST\_%`, `procedure names, as a SQL LIKE pattern (an exact name too), in either case; \_ is an underscore, _ any character`)
	merge := fs.String("merge", "", "a catalog file the drafts are added to: its entries are kept as they are, and a procedure it already runs is not drafted again")
	if err := parse(fs, args); err != nil {
		return err
	}
	instances, err := tenants.LoadFile(*instancesPath)
	if err != nil {
		return err
	}
	if *name == "" {
		names := instances.Names()
		if len(names) != 1 {
			return fmt.Errorf("%s has %d instances (%s): choose one with INSTANCE=", *instancesPath, len(names), strings.Join(names, ", "))
		}
		*name = names[0]
	}
	inst, err := instances.Lookup(ctx, *name)
	if err != nil {
		return fmt.Errorf("instance %s: %w", *name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	procs, dialect, err := firebird.DescribeMatching(ctx, inst.Connection, *like)
	if err != nil {
		return fmt.Errorf("instance %s: %w", *name, err)
	}
	if len(procs) == 0 {
		return fmt.Errorf("no procedure of instance %s matches %q (in upper case, as Firebird keeps unquoted names)", *name, *like)
	}
	doc, notes := draft(dialect, procs)
	if *merge != "" {
		if doc, err = merged(*merge, doc, &notes); err != nil {
			return err
		}
	}
	for _, n := range notes {
		fmt.Fprintln(stderr, "review:", n)
	}
	return doc.Encode(stdout)
}

// merged is the catalog file at path with the drafts of procedures it does
// not run yet added after its own entries, which are kept as they are.
func merged(path string, drafts catalog.File, notes *[]string) (catalog.File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return catalog.File{}, err
	}
	if _, err := catalog.Decode(data); err != nil {
		return catalog.File{}, fmt.Errorf("%s: %w", path, err)
	}
	var f catalog.File
	if err := json.Unmarshal(data, &f); err != nil {
		return catalog.File{}, fmt.Errorf("%s: %w", path, err)
	}
	runs, claves := map[string]bool{}, map[string]bool{}
	for _, op := range f.Operations {
		runs[strings.ToUpper(op.Procedure)], claves[op.Clave] = true, true
	}
	for _, op := range drafts.Operations {
		if runs[strings.ToUpper(op.Procedure)] {
			continue
		}
		if claves[op.Clave] {
			first := op.Clave
			op.Clave += "_" + strings.ToLower(op.Procedure)
			*notes = append(*notes, fmt.Sprintf("%s: named %s, as %s is taken in %s", op.Procedure, op.Clave, first, path))
		}
		f.Operations = append(f.Operations, op)
	}
	return f, nil
}
