// Command minttoken mints a bearer token for one instance with a key of the
// access document, or makes a new key for that document (README, "Tokens").
// The token is shown once and stored nowhere; its id is what revokes it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/erp-gateway/gateway/shared/access"
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/tenants"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "minttoken:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("minttoken", flag.ContinueOnError)
	instance := fs.String("instance", "", "the instance the token opens")
	file := fs.String("access", "", "access document file (local)")
	secret := fs.String("access-secret", "", "Secrets Manager id of the access document (AWS)")
	keyID := fs.String("key", "", "key id to mint with (default: the document's mint_key)")
	newKey := fs.Bool("new-key", false, "print a new random key for the access document instead")
	readOnly := fs.Bool("read-only", false, "the token may only read (executequery)")
	claves := fs.String("claves", "", "comma-separated CLAVEs: the only operations the token may run")
	expires := fs.String("expires", "", "last day the token works (YYYY-MM-DD, through 23:59:59 UTC), an RFC 3339 instant, or never (default: a year from today)")
	catalogFile := fs.String("catalog", "", "catalog the CLAVEs are checked against (default: the built-in one)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *newKey {
		key, err := access.NewKey()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "new key (add it under \"keys\" with an id of your choice, e.g. %q; it is a secret):\n%s\n", "2026-11", key)
		return nil
	}
	if !erp.ValidInstanceName(*instance) {
		return errors.New("-instance: want the instance name (1 to 64 letters, digits, _ or -)")
	}
	limits, err := parseLimits(*readOnly, *claves, *expires, *catalogFile, time.Now())
	if err != nil {
		return err
	}
	data, err := load(ctx, *file, *secret)
	if err != nil {
		return err
	}
	doc, err := access.Parse(data)
	if err != nil {
		return err
	}
	token, id, err := doc.Mint(*instance, *keyID, limits)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "token for instance %s (give it to the integrator; it is stored nowhere):\n%s\n", *instance, token)
	fmt.Fprintf(out, "token id (to revoke it, add it to the instance document's \"revoked_tokens\"): %s\n", id)
	fmt.Fprintf(out, "it may run: %s\n", describe(limits))
	return nil
}

// parseLimits reads the flags that narrow a token. CLAVEs are checked
// against the catalog: a misspelt one would mint a token that opens nothing.
func parseLimits(readOnly bool, claves, expires, catalogFile string, now time.Time) (erp.Limits, error) {
	l := erp.Limits{ReadOnly: readOnly}
	switch expires {
	case "never":
	case "":
		// A token nobody thought to limit in time still ends: a year on.
		y, m, d := now.UTC().AddDate(1, 0, 0).Date()
		l.Expires = time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
	default:
		if day, err := time.Parse(time.DateOnly, expires); err == nil {
			l.Expires = day.AddDate(0, 0, 1)
		} else if at, err := time.Parse(time.RFC3339, expires); err == nil {
			l.Expires = at.UTC()
		} else {
			return l, fmt.Errorf("-expires %q: want YYYY-MM-DD or an RFC 3339 instant", expires)
		}
		if !l.Expires.After(now) {
			return l, fmt.Errorf("-expires %q is in the past", expires)
		}
	}
	if claves == "" {
		return l, nil
	}
	cat := catalog.Default()
	if catalogFile != "" {
		var err error
		if cat, err = catalog.LoadFile(catalogFile); err != nil {
			return l, err
		}
	}
	for _, c := range strings.Split(claves, ",") {
		c = strings.TrimSpace(c)
		op, ok := cat.Lookup(c)
		switch {
		case !ok:
			return l, fmt.Errorf("-claves: %q is not an operation of the catalog (give the deployment's with CATALOG=file)", c)
		case readOnly && op.Endpoint == catalog.Execute:
			return l, fmt.Errorf("-claves: %s is a write, and the token is read-only", c)
		}
		if !slices.Contains(l.Claves, c) {
			l.Claves = append(l.Claves, c)
		}
	}
	return l, nil
}

func describe(l erp.Limits) string {
	what := "every operation"
	switch {
	case len(l.Claves) > 0:
		what = strings.Join(l.Claves, ", ")
	case l.ReadOnly:
		what = "reads only"
	}
	if l.Expires.IsZero() {
		return what + ", with no expiry"
	}
	return what + ", until " + l.Expires.Format(time.RFC3339) + " (UTC)"
}

func load(ctx context.Context, file, secret string) ([]byte, error) {
	switch {
	case file != "" && secret != "":
		return nil, errors.New("give -access or -access-secret, not both")
	case file != "":
		return os.ReadFile(file)
	case secret != "":
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("AWS configuration: %w", err)
		}
		return tenants.SecretString(ctx, secretsmanager.NewFromConfig(cfg), secret)
	}
	return nil, errors.New("give -access FILE or -access-secret ID: where the access document is")
}
