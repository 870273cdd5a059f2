// Command minttoken mints a bearer token for one instance with a signing
// key, or makes a new signing key and the public key the access document
// holds for it (infra/docs/configuration.md#tokens). The token is shown once and stored
// nowhere; its id is what revokes it.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
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
	file := fs.String("signing-key", "", "signing key file (make token-key made it)")
	secret := fs.String("signing-key-secret", "", "Secrets Manager id of the signing key (AWS), one the functions cannot read")
	newKey := fs.String("new-key", "", "make a new signing key with this id instead, and print it and its public key")
	readOnly := fs.Bool("read-only", false, "the token may only read (executequery)")
	claves := fs.String("claves", "", "comma-separated CLAVEs: the only operations the token may run")
	expires := fs.String("expires", "", "last day the token works (YYYY-MM-DD, through 23:59:59 UTC), an RFC 3339 instant, a duration from now (2h), or never (default: a year from today)")
	onlyToken := fs.Bool("only-token", false, "print the token alone (make deploy's hook token)")
	catalogFile := fs.String("catalog", "", "catalog the CLAVEs are checked against (default: the built-in one)")
	accessFile := fs.String("access", "", "access document file: check that the token opens its instance with it")
	accessSecret := fs.String("access-secret", "", "Secrets Manager id of the access document (AWS): check that the token opens its instance with it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// The flag package stops at the first word that is not a flag: what
	// follows it, a limit among them, would be dropped without a word.
	if fs.NArg() > 0 {
		return fmt.Errorf("%q is not a flag: every value follows its flag (-expires 2h)", fs.Arg(0))
	}
	if *newKey != "" {
		signer, err := access.NewSigner(*newKey)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "new signing key (keep it where only whoever mints can read it: a file, or a secret the functions cannot read; it is shown once):\n%s", signer.JSON())
		fmt.Fprintf(out, "its public key, for the access document's \"keys\" (add it beside the old one to rotate):\n\"%s\": \"%s\"\n", signer.KeyID(), signer.PublicKey())
		return nil
	}
	if !erp.ValidInstanceName(*instance) {
		return errors.New("-instance: want the instance name (" + erp.InstanceNameRule + ")")
	}
	limits, err := parseLimits(*readOnly, *claves, *expires, *catalogFile, time.Now())
	if err != nil {
		return err
	}
	data, err := load(ctx, *file, *secret, "-signing-key")
	if err != nil {
		return err
	}
	signer, err := access.ParseSigner(data)
	if err != nil {
		if _, isDoc := access.Parse(data); isDoc == nil {
			return errors.New("that is an access document, which holds public keys only and cannot mint: give the signing key (make token-key made it)")
		}
		return err
	}
	token, id, err := signer.Mint(*instance, limits)
	if err != nil {
		return err
	}
	opens := ""
	if *accessFile != "" || *accessSecret != "" {
		if opens, err = check(ctx, *accessFile, *accessSecret, *instance, token); err != nil {
			return err
		}
	}
	if *onlyToken {
		fmt.Fprintln(out, token)
		return nil
	}
	fmt.Fprintf(out, "token for instance %s (give it to the integrator; it is stored nowhere):\n%s\n", *instance, token)
	fmt.Fprintf(out, "token id (to revoke it, add it to the instance document's \"revoked_tokens\", and its /reader document's with ReadOnlyDatabaseUser): %s\n", id)
	fmt.Fprintf(out, "it may run: %s\n", describe(limits))
	if *claves != "" {
		fmt.Fprintf(out, "its CLAVEs were checked against %s\n", cmp.Or(*catalogFile, "the specification's built-in catalog"))
	}
	if opens != "" {
		fmt.Fprintln(out, opens)
	}
	if signer.PublicKey() == access.DemoKey {
		fmt.Fprintln(out, "note: signed with the demo key, which is public: only make run's local server accepts it; a deployment refuses it ("+strconv.Itoa(int(erp.CodeAccessDemoKey))+")")
	}
	return nil
}

// check verifies token with the access document the deployment reads, so
// that an edit of the document is checked before an integrator meets it.
func check(ctx context.Context, file, secret, instance, token string) (string, error) {
	data, err := load(ctx, file, secret, "-access")
	if err != nil {
		return "", err
	}
	doc, err := access.Parse(data)
	if err != nil {
		return "", err
	}
	if _, err := doc.Verify(instance, token); err != nil {
		return "", fmt.Errorf("the access document does not open instance %s with this token (%w): add the signing key's public key to its \"keys\"", instance, err)
	}
	what := "the access document " + cmp.Or(file, secret)
	switch {
	case doc.HoldsDemoKey() && secret != "":
		// A deployment's document: it refuses every token (1207).
		return "", fmt.Errorf("the access document %s holds the public demo key, so the deployment reading it refuses every token (%d): replace that key with one of your own (make token-key)", secret, erp.CodeAccessDemoKey)
	case doc.HoldsDemoKey():
		what += ", which holds the public demo key: a deployment reading it refuses every token (" + strconv.Itoa(int(erp.CodeAccessDemoKey)) + ")"
	}
	return "it opens instance " + instance + " with " + what, nil
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
		} else if d, err := time.ParseDuration(expires); err == nil {
			l.Expires = now.Add(d).UTC()
		} else {
			return l, fmt.Errorf("-expires %q: want YYYY-MM-DD, an RFC 3339 instant, a duration such as 2h, or never", expires)
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

// load reads what flag (and flag-secret) name: a file or a secret.
func load(ctx context.Context, file, secret, flag string) ([]byte, error) {
	switch {
	case file != "" && secret != "":
		return nil, fmt.Errorf("give %s or %s-secret, not both", flag, flag)
	case file != "":
		return os.ReadFile(file)
	case secret != "":
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("AWS configuration: %w", err)
		}
		return tenants.SecretString(ctx, secretsmanager.NewFromConfig(cfg), secret)
	}
	return nil, fmt.Errorf("give %s FILE or %s-secret ID", flag, flag)
}
