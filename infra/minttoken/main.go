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

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/erp-gateway/gateway/shared/access"
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
	data, err := load(ctx, *file, *secret)
	if err != nil {
		return err
	}
	doc, err := access.Parse(data)
	if err != nil {
		return err
	}
	token, id, err := doc.Mint(*instance, *keyID)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "token for instance %s (give it to the integrator; it is stored nowhere):\n%s\n", *instance, token)
	fmt.Fprintf(out, "token id (to revoke it, add it to the instance document's \"revoked_tokens\"): %s\n", id)
	return nil
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
