package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/tenants"
)

func fromDB(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("from-db", flag.ContinueOnError)
	instancesPath := fs.String("instances", "infra/instances.demo.json", "instances file")
	name := fs.String("instance", "", "instance to read (may be left out when the file has one)")
	like := fs.String("procedures", "REST_%", "procedure names, as a SQL LIKE pattern (an exact name too), in either case")
	if err := fs.Parse(args); err != nil {
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
	procs, err := firebird.DescribeMatching(ctx, inst.Connection, *like)
	if err != nil {
		return fmt.Errorf("instance %s: %w", *name, err)
	}
	if len(procs) == 0 {
		return fmt.Errorf("no procedure of instance %s matches %q (in upper case, as Firebird keeps unquoted names)", *name, *like)
	}
	doc, notes := draft(procs)
	for _, n := range notes {
		fmt.Fprintln(stderr, "review:", n)
	}
	return doc.Encode(stdout)
}
