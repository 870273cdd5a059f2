// Command pretraffic is the CodeDeploy pre-traffic hook of both functions: it
// checks a new version before it takes traffic (shared/pretraffic; README,
// "Operating"). Its wiring lives here rather than in lambdafn so that the
// functions' binaries do not carry the Lambda and CodeDeploy clients.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/codedeploy"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/erp-gateway/gateway/shared/access"
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/lambdafn"
	"github.com/erp-gateway/gateway/shared/pretraffic"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// catalogB64 is the functions' catalog, built in as theirs is (make build),
// so the hook sends a read of each of their operations.
var catalogB64 string

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	ctx := context.Background()
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Error("cannot start: no AWS configuration to report with", "err", err)
		os.Exit(1)
	}
	hook, err := newHook(ctx, os.Getenv, awsCfg, log)
	if err != nil {
		// Report every deployment Failed, at once, rather than exit and
		// leave CodeDeploy waiting for the hook's hour.
		log.Error("cannot check new versions: every deployment fails until this is mended", "err", err)
		hook = pretraffic.Broken(codedeploy.NewFromConfig(awsCfg), err, log)
	}
	lambda.Start(hook.Handle)
}

// newHook reads GATEWAY_HOOK_ENDPOINT (whose version it checks),
// GATEWAY_HOOK_TARGET (the new version's ARN), GATEWAY_HOOK_INSTANCE,
// GATEWAY_CLASS and the access document as the functions read it.
func newHook(ctx context.Context, getenv func(string) string, awsCfg aws.Config, log *slog.Logger) (*pretraffic.Hook, error) {
	cfg, err := gateway.ConfigFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	endpoint := catalog.Endpoint(getenv("GATEWAY_HOOK_ENDPOINT"))
	if endpoint != catalog.ExecuteQuery && endpoint != catalog.Execute {
		return nil, fmt.Errorf("GATEWAY_HOOK_ENDPOINT=%q: want %s or %s", endpoint, catalog.ExecuteQuery, catalog.Execute)
	}
	target := getenv("GATEWAY_HOOK_TARGET")
	if target == "" {
		return nil, errors.New("GATEWAY_HOOK_TARGET: the ARN of the version to check is required")
	}
	instance := getenv("GATEWAY_HOOK_INSTANCE")
	if instance != "" && !erp.ValidInstanceName(instance) {
		return nil, fmt.Errorf("GATEWAY_HOOK_INSTANCE=%q is not an instance name", instance)
	}
	cat, err := lambdafn.Catalog(catalogB64, getenv)
	if err != nil {
		return nil, err
	}
	// The access document is read at each check, not at start: a hook runs
	// once per deployment and must sign with the key of the day.
	token := func(ctx context.Context, instance string) (string, error) {
		data, err := accessDocument(ctx, getenv, awsCfg)
		if err != nil {
			return "", err
		}
		doc, err := access.Parse(data)
		if err != nil {
			return "", err
		}
		// Least privilege: the probes only read (execute's is refused
		// before any database work), and the token dies with the hook.
		tok, _, err := doc.Mint(instance, "", erp.Limits{ReadOnly: true, Expires: time.Now().Add(time.Hour)})
		return tok, err
	}
	return pretraffic.New(pretraffic.Config{Endpoint: endpoint, Target: target, Instance: instance, Class: cmp.Or(cfg.Class, gateway.DefaultClass)},
		cat, awslambda.NewFromConfig(awsCfg), codedeploy.NewFromConfig(awsCfg), token, log), nil
}

func accessDocument(ctx context.Context, getenv func(string) string, awsCfg aws.Config) ([]byte, error) {
	if inline := getenv("GATEWAY_ACCESS_JSON"); inline != "" {
		return []byte(inline), nil
	}
	id := getenv("GATEWAY_ACCESS_SECRET")
	if id == "" {
		return nil, errors.New("no access document: set GATEWAY_ACCESS_SECRET (or GATEWAY_ACCESS_JSON)")
	}
	return tenants.SecretString(ctx, secretsmanager.NewFromConfig(awsCfg), id)
}
