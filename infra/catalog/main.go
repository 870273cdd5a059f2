// Command catalog checks catalog files and drafts catalog entries from a
// database's procedures:
//
//	catalog check FILE...                      exit 1 naming the entry and field of the first error
//	catalog from-db -instances F [-instance N] [-procedures 'REST\_%']
//	catalog doctor -instances F [-catalog FILE]  compare a catalog with each instance's database
//	catalog idempotency-sql [-user GATEWAY]    the idempotency keys' table and its grants, for a DBA
//	catalog kept -instances F -instance N -key K  the answers kept under a key, as JSON
//
// `make build` runs check, `make catalog-from-db` from-db, `make doctor`
// doctor, `make idempotency-sql` idempotency-sql, `make kept` kept.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/idempotency"
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
	case "idempotency-sql":
		err = idempotencySQL(os.Args[2:], os.Stdout)
	case "kept":
		err = kept(ctx, os.Args[2:], os.Stdout)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "catalog:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: catalog check FILE... | catalog from-db -instances FILE [-instance NAME] [-procedures 'REST\\_%'] | catalog doctor -instances FILE [-catalog FILE] | catalog idempotency-sql [-user NAME] | catalog kept -instances FILE -instance NAME -key KEY")
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

// parse reads a subcommand's flags. The flag package stops at the first
// word that is not a flag: what follows it would be dropped without a word.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: %q is not a flag: every value follows its flag (-instance demo)", fs.Name(), fs.Arg(0))
	}
	return nil
}

func idempotencySQL(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("idempotency-sql", flag.ContinueOnError)
	user := fs.String("user", "GATEWAY", "the gateway's Firebird user (or role) to grant the table to")
	if err := parse(fs, args); err != nil {
		return err
	}
	if !catalog.ValidIdentifier(*user) {
		return fmt.Errorf("idempotency-sql: %q is not a user name (letters, digits, _ and $, starting with a letter)", *user)
	}
	_, err := io.WriteString(stdout, idempotency.TableSQL(strings.ToUpper(*user)))
	return err
}
