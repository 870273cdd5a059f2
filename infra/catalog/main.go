// Command catalog checks catalog files and drafts catalog entries from a
// database's procedures:
//
//	catalog check FILE...                      exit 1 naming the entry and field of the first error
//	catalog from-db -instances F [-instance N] [-procedures 'REST_%']
//	catalog doctor -instances F [-catalog FILE]  compare a catalog with each instance's database
//
// `make build` runs check, `make catalog-from-db` from-db, `make doctor` doctor.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"

	"github.com/erp-gateway/gateway/shared/catalog"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	switch os.Args[1] {
	case "check":
		err = check(os.Args[2:])
	case "from-db":
		err = fromDB(ctx, os.Args[2:], os.Stdout, os.Stderr)
	case "doctor":
		err = doctor(ctx, os.Args[2:], os.Stdout)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "catalog:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: catalog check FILE... | catalog from-db -instances FILE [-instance NAME] [-procedures 'REST_%'] | catalog doctor -instances FILE [-catalog FILE]")
	os.Exit(2)
}

func check(files []string) error {
	if len(files) == 0 {
		return errors.New("check: name at least one catalog file")
	}
	for _, f := range files {
		if _, err := catalog.LoadFile(f); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "catalog %s: valid\n", f)
	}
	return nil
}
