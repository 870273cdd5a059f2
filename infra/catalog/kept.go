package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/idempotency"
	"github.com/erp-gateway/gateway/shared/record"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// kept prints the answers kept under an Idempotency-Key in an instance's
// database, as the client got them: a line naming the row, then the JSON.
func kept(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("kept", flag.ContinueOnError)
	instancesPath := fs.String("instances", "infra/instances.demo.json", "instances file")
	instance := fs.String("instance", "demo", "the instance")
	key := fs.String("key", "", "the Idempotency-Key")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *key == "" {
		return fmt.Errorf("kept: name the key: -key K")
	}
	instances, err := tenants.LoadFile(*instancesPath)
	if err != nil {
		return err
	}
	inst, err := instances.Lookup(ctx, *instance)
	if err != nil {
		return err
	}
	pools := firebird.NewPools(firebird.Options{})
	defer pools.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rows, err := idempotency.New(pools, 0).Show(ctx, erp.Target{Instance: *instance, Connection: inst.Connection}, *key,
		func() *record.Encoder { return gateway.NewAnswer(record.Limits{}) })
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return fmt.Errorf("kept: no answer is kept under %q in instance %s", *key, *instance)
	}
	for _, k := range rows {
		fmt.Fprintf(stdout, "# scope %s, key %s, CLAVE %s, kept %s UTC\n%s\n", k.Scope, k.Key, k.Clave, k.Created.Format(time.DateTime), k.Answer)
	}
	return nil
}
