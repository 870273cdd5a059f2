package tenants_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/erp-gateway/gateway/shared/awstest"
	"github.com/erp-gateway/gateway/shared/tenants"
)

const document = `{"host":"db.example","database":"/erp.fdb","user":"GATEWAY","password":"x"}`

func client(t *testing.T, endpoint string) *secretsmanager.Client {
	t.Helper()
	for k, v := range awstest.Env() {
		t.Setenv(k, v)
	}
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) { o.BaseEndpoint = aws.String(endpoint) })
}

// TestSecretScheduledForDeletion: a secret Secrets Manager will not read
// because it is scheduled for deletion is an unknown instance, whatever
// the wording of the refusal; the same exception about anything else is
// not.
func TestSecretScheduledForDeletion(t *testing.T) {
	sm := awstest.Start(t, false)
	sm.Put("p/served", document)
	sm.Refuse("p/marked", "InvalidRequestException", "You can't perform this operation on the secret because it was marked for deletion.", true)
	sm.Refuse("p/scheduled", "InvalidRequestException", "You can't perform this operation on the secret because it was scheduled for deletion.", true)
	sm.Refuse("p/new-words", "InvalidRequestException", "This secret is on its way out.", true)
	sm.Refuse("p/other", "InvalidRequestException", "You can't perform this operation on the secret because it was marked for deletion, or so we thought.", false)
	sm.Fail("p/undecryptable", "DecryptionFailure")
	fetcher := tenants.NewSecretsManager(client(t, sm.URL), "p/", "")
	tests := []struct {
		name string
		want error // nil: served
	}{
		{"served", nil},
		{"missing", tenants.ErrUnknown},
		{"marked", tenants.ErrUnknown},
		{"scheduled", tenants.ErrUnknown},
		{"new-words", tenants.ErrUnknown},
		{"other", tenants.ErrUnavailable},
		{"undecryptable", tenants.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inst, err := fetcher.Fetch(context.Background(), tt.name)
			if !errors.Is(err, tt.want) || (tt.want == nil && inst.Host != "db.example") {
				t.Fatalf("%+v, %v; want %v", inst, err, tt.want)
			}
		})
	}
}

// TestSecretsInMoto: against moto's Secrets Manager, a secret is served,
// rotated by a new value, unknown once scheduled for deletion and served
// again once restored; a binary one is unavailable.
func TestSecretsInMoto(t *testing.T) {
	ctx := context.Background()
	c := client(t, awstest.Moto(t))
	if _, err := c.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("p/acme"), SecretString: aws.String(document)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("p/binary"), SecretBinary: []byte(document)}); err != nil {
		t.Fatal(err)
	}
	fetcher := tenants.NewSecretsManager(c, "p/", "")
	fetch := func(name string, want error, host string) {
		t.Helper()
		inst, err := fetcher.Fetch(ctx, name)
		if !errors.Is(err, want) || (want == nil && inst.Host != host) {
			t.Fatalf("%s: %+v, %v; want %v", name, inst, err, want)
		}
	}
	fetch("acme", nil, "db.example")
	fetch("nobody", tenants.ErrUnknown, "")
	fetch("binary", tenants.ErrUnavailable, "")
	if _, err := c.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: aws.String("p/acme"),
		SecretString: aws.String(`{"host":"db2.example","database":"/erp.fdb","user":"GATEWAY","password":"y"}`)}); err != nil {
		t.Fatal(err)
	}
	fetch("acme", nil, "db2.example")
	if _, err := c.DeleteSecret(ctx, &secretsmanager.DeleteSecretInput{SecretId: aws.String("p/acme"), RecoveryWindowInDays: aws.Int64(7)}); err != nil {
		t.Fatal(err)
	}
	fetch("acme", tenants.ErrUnknown, "")
	if _, err := c.RestoreSecret(ctx, &secretsmanager.RestoreSecretInput{SecretId: aws.String("p/acme")}); err != nil {
		t.Fatal(err)
	}
	fetch("acme", nil, "db2.example")
}
