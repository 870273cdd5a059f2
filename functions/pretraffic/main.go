// Command pretraffic is the CodeDeploy pre-traffic hook of both functions: it
// checks a new version before it takes traffic (shared/pretraffic; README,
// "Operating"). Its wiring lives here rather than in lambdafn so that the
// functions' binaries do not carry the Lambda and CodeDeploy clients.
package main

import (
	"context"
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
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/lambdafn"
	"github.com/erp-gateway/gateway/shared/pretraffic"
	"github.com/erp-gateway/gateway/shared/settings"
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

// newHook reads the hook's settings (the endpoint whose new version it
// checks, that version's ARN, the instance it calls), the class and the
// access document as the functions read it.
func newHook(ctx context.Context, getenv func(string) string, awsCfg aws.Config, log *slog.Logger) (*pretraffic.Hook, error) {
	s, err := settings.Read(getenv)
	if err != nil {
		return nil, err
	}
	// Empty is valid for the functions, which read the same table; a hook
	// checks nothing without them.
	if s.HookEndpoint == "" || s.HookTarget == "" {
		return nil, fmt.Errorf("%s and %s are both required (the template sets them)", settings.EnvHookEndpoint, settings.EnvHookTarget)
	}
	cat, err := lambdafn.Catalog(catalogB64, s.Catalog)
	if err != nil {
		return nil, err
	}
	// The access document is read at each check, not at start: a hook runs
	// once per deployment and must sign with the key of the day.
	token := func(ctx context.Context, instance string) (string, error) {
		data, err := accessDocument(ctx, s, awsCfg)
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
	return pretraffic.New(pretraffic.Config{Endpoint: s.HookEndpoint, Target: s.HookTarget, Instance: s.HookInstance, Class: s.Class},
		cat, awslambda.NewFromConfig(awsCfg), codedeploy.NewFromConfig(awsCfg), token, log), nil
}

func accessDocument(ctx context.Context, s settings.Settings, awsCfg aws.Config) ([]byte, error) {
	if s.AccessJSON != "" {
		return []byte(s.AccessJSON), nil
	}
	if s.AccessSecret == "" {
		return nil, fmt.Errorf("no access document: set %s (or %s)", settings.EnvAccessSecret, settings.EnvAccessJSON)
	}
	return tenants.SecretString(ctx, secretsmanager.NewFromConfig(awsCfg), s.AccessSecret)
}
