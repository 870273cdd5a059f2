package tenants

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
)

// SecretsClient is the one call of Secrets Manager the gateway makes;
// *secretsmanager.Client is it.
type SecretsClient interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// SecretsManager reads instance documents from secrets named prefix+instance.
type SecretsManager struct {
	client SecretsClient
	prefix string
}

// NewSecretsManager returns a Fetcher over client.
func NewSecretsManager(client SecretsClient, prefix string) *SecretsManager {
	return &SecretsManager{client: client, prefix: prefix}
}

// Fetch reads one instance's secret. A secret that does not exist is
// ErrUnknown; every other failure is ErrUnavailable.
func (s *SecretsManager) Fetch(ctx context.Context, name string) (Instance, error) {
	out, err := s.client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(s.prefix + name)})
	var notFound *types.ResourceNotFoundException
	switch {
	case errors.As(err, &notFound):
		return Instance{}, ErrUnknown
	case err != nil:
		return Instance{}, fmt.Errorf("%w: reading secret %s%s: %w", ErrUnavailable, s.prefix, name, err)
	case out.SecretString == nil:
		return Instance{}, fmt.Errorf("%w: secret %s%s has no SecretString", ErrUnavailable, s.prefix, name)
	}
	inst, err := ParseInstance([]byte(*out.SecretString))
	if err != nil {
		return Instance{}, fmt.Errorf("%w: secret %s%s: %w", ErrUnavailable, s.prefix, name, err)
	}
	return inst, nil
}
