package tenants

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/erp-gateway/gateway/shared/tally"
)

// SecretsClient is the calls of Secrets Manager the gateway makes;
// *secretsmanager.Client is it.
type SecretsClient interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
	// DescribeSecret tells a secret scheduled for deletion (Fetch).
	DescribeSecret(ctx context.Context, in *secretsmanager.DescribeSecretInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.DescribeSecretOutput, error)
}

// SecretString reads one secret's text. Its errors name the secret, never
// its content.
func SecretString(ctx context.Context, client SecretsClient, id string) ([]byte, error) {
	tally.Add(ctx, tally.SecretFetches)
	out, err := client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
	switch {
	case err != nil:
		return nil, fmt.Errorf("reading secret %s: %w", id, err)
	case out.SecretString == nil:
		return nil, fmt.Errorf("secret %s has no SecretString", id)
	}
	return []byte(*out.SecretString), nil
}

// SecretsManager reads instance documents from secrets named
// prefix+instance+suffix.
type SecretsManager struct {
	client         SecretsClient
	prefix, suffix string
}

// NewSecretsManager returns a Fetcher over client. suffix is "" for the
// instances' own secrets, or names the secrets of a user for reads
// ("/reader").
func NewSecretsManager(client SecretsClient, prefix, suffix string) *SecretsManager {
	return &SecretsManager{client: client, prefix: prefix, suffix: suffix}
}

// Fetch reads one instance's secret. A secret that does not exist, or is
// scheduled for deletion, is ErrUnknown; every other failure is
// ErrUnavailable, and a secret that was read but is no instance document
// is ErrMalformed as well.
func (s *SecretsManager) Fetch(ctx context.Context, name string) (Instance, error) {
	tally.Add(ctx, tally.SecretFetches)
	id := s.prefix + name + s.suffix
	out, err := s.client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
	var notFound *types.ResourceNotFoundException
	var invalid *types.InvalidRequestException
	switch {
	case errors.As(err, &notFound):
		return Instance{}, ErrUnknown
	case errors.As(err, &invalid) && s.deleted(ctx, id):
		// A secret scheduled for deletion is an instance on its way out:
		// as unknown as one already gone.
		return Instance{}, ErrUnknown
	case err != nil:
		return Instance{}, fmt.Errorf("%w: reading secret %s: %w", ErrUnavailable, id, err)
	case out.SecretString == nil:
		return Instance{}, fmt.Errorf("%w: %w: secret %s has no SecretString", ErrUnavailable, ErrMalformed, id)
	}
	inst, err := ParseInstance([]byte(*out.SecretString))
	if err != nil {
		return Instance{}, fmt.Errorf("%w: %w: secret %s: %w", ErrUnavailable, ErrMalformed, id, err)
	}
	return inst, nil
}

// deleted reports id as scheduled for deletion, by its state: Secrets
// Manager refuses to read such a secret with an InvalidRequestException
// whose wording has changed over the years ("marked for deletion",
// "scheduled for deletion"), and that exception says other things too.
// Asked on that rare path only.
func (s *SecretsManager) deleted(ctx context.Context, id string) bool {
	tally.Add(ctx, tally.SecretFetches)
	out, err := s.client.DescribeSecret(ctx, &secretsmanager.DescribeSecretInput{SecretId: aws.String(id)})
	var notFound *types.ResourceNotFoundException
	return errors.As(err, &notFound) || (err == nil && out.DeletedDate != nil)
}
