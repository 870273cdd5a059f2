// Command pretraffic is the CodeDeploy pre-traffic hook of both functions: it
// checks a new version before it takes traffic (shared/pretraffic; infra/docs/operating.md#operating). Its wiring lives here rather than in lambdafn so that the
// functions' binaries do not carry the Lambda and CodeDeploy clients.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/codedeploy"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/erp-gateway/gateway/shared/lambdafn"
	"github.com/erp-gateway/gateway/shared/pretraffic"
	"github.com/erp-gateway/gateway/shared/settings"
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

// newHook reads the hook's settings: the endpoint whose new version it
// checks, that version's ARN, the instance it calls and the token it calls
// it with, and the class.
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
	cat, err := lambdafn.Catalog(catalogB64, s)
	if err != nil {
		return nil, err
	}
	// The hook holds a token, never a key: make deploy mints one for each
	// deployment, read-only and short-lived.
	token := func(context.Context, string) (string, error) {
		if s.HookToken == "" {
			return "", fmt.Errorf("no token to call instance %s with (%s): deploy with make deploy SIGNING_KEY=file (or SIGNING_KEY_SECRET=id), which mints one", s.HookInstance, settings.EnvHookToken)
		}
		return s.HookToken, nil
	}
	return pretraffic.New(pretraffic.Config{Endpoint: s.HookEndpoint, Target: s.HookTarget, Instance: s.HookInstance, Class: s.Class},
		cat, awslambda.NewFromConfig(awsCfg), codedeploy.NewFromConfig(awsCfg), token, log), nil
}
