// Package awstest gives tests AWS endpoints that speak the services'
// protocols (SigV4-signed requests): Secrets Manager (moto's, behind a front
// that counts and fails on demand),
// Lambda's Invoke and CodeDeploy's PutLifecycleEventHookExecutionStatus, so
// the real AWS SDK talks to them over HTTP.
package awstest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go"
)

// SecretsManager is moto's Secrets Manager (Moto) behind a front of ours
// that does what moto cannot: it counts the reads of each secret, and makes
// them fail, wait or hang on demand. Secrets live in moto: reads, versions,
// deletion and restoring are moto's.
type SecretsManager struct {
	URL string

	t      testing.TB
	moto   *httputil.ReverseProxy
	client *secretsmanager.Client
	mu     sync.Mutex
	fails  map[string]refusal // id -> the AWS error answered instead
	calls  map[string]int
	total  int
	fail   string // error type answered for every id
	delay  time.Duration
	hung   chan struct{} // closed when the endpoint answers again
}

// Start serves a Secrets Manager endpoint until the test ends. With env,
// it points the standard AWS environment of the test process at it.
func Start(t testing.TB, env bool) *SecretsManager {
	t.Helper()
	moto, err := url.Parse(Moto(t))
	if err != nil {
		t.Fatal(err)
	}
	sm := &SecretsManager{t: t, moto: httputil.NewSingleHostReverseProxy(moto), fails: map[string]refusal{}, calls: map[string]int{}}
	srv := httptest.NewServer(sm)
	t.Cleanup(srv.Close)
	sm.URL = srv.URL
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion(Env()["AWS_REGION"]),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(Env()["AWS_ACCESS_KEY_ID"], Env()["AWS_SECRET_ACCESS_KEY"], "")))
	if err != nil {
		t.Fatal(err)
	}
	sm.client = secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) { o.BaseEndpoint = aws.String(moto.String()) })
	if env {
		for k, v := range sm.Env() {
			t.Setenv(k, v)
		}
	}
	return sm
}

// Env is the standard AWS environment that points the SDK at the endpoint,
// for a process the test starts.
func (sm *SecretsManager) Env() map[string]string {
	env := Env()
	env["AWS_ENDPOINT_URL_SECRETS_MANAGER"] = sm.URL
	return env
}

// Env is the standard AWS environment of a process that talks only to test
// endpoints: a region, made-up credentials, no configuration files. Add the
// endpoints' AWS_ENDPOINT_URL_<SERVICE> to it.
func Env() map[string]string {
	return map[string]string{
		"AWS_REGION":                  "us-east-1",
		"AWS_ACCESS_KEY_ID":           "AKIDEXAMPLE",
		"AWS_SECRET_ACCESS_KEY":       "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
		"AWS_CONFIG_FILE":             "/dev/null",
		"AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
		"AWS_EC2_METADATA_DISABLED":   "true",
	}
}

// Put stores a secret's new value in moto (a new version, AWSCURRENT), and
// ends any failure made for it.
func (sm *SecretsManager) Put(id, value string) {
	sm.t.Helper()
	ctx := context.Background()
	sm.mu.Lock()
	delete(sm.fails, id)
	sm.mu.Unlock()
	_, err := sm.client.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: aws.String(id), SecretString: aws.String(value)})
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "ResourceNotFoundException" {
		_, err = sm.client.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(id), SecretString: aws.String(value)})
	}
	if err != nil {
		sm.t.Fatalf("storing secret %s in moto: %v", id, err)
	}
}

// PutJSON stores v, marshalled, as a secret.
func (sm *SecretsManager) PutJSON(id string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		sm.t.Fatal(err)
	}
	sm.Put(id, string(b))
}

// Delete schedules id for deletion in moto, as an operator does: it cannot
// be read until restored.
func (sm *SecretsManager) Delete(id string) {
	sm.t.Helper()
	if _, err := sm.client.DeleteSecret(context.Background(), &secretsmanager.DeleteSecretInput{SecretId: aws.String(id), RecoveryWindowInDays: aws.Int64(7)}); err != nil {
		sm.t.Fatalf("deleting secret %s in moto: %v", id, err)
	}
}

// refusal is an AWS error GetSecretValue answers for an id instead of
// moto, and whether DescribeSecret then says the secret is scheduled for
// deletion.
type refusal struct {
	errorType, message string
	deleted            bool
}

// Fail makes GetSecretValue of id answer an AWS error moto cannot be made
// to: "DecryptionFailure", "ThrottlingException", ...
func (sm *SecretsManager) Fail(id, errorType string) {
	sm.Refuse(id, errorType, messages[errorType], false)
}

// Refuse makes GetSecretValue of id answer errorType with message, and
// DescribeSecret say whether it is scheduled for deletion: wordings no
// service uses.
func (sm *SecretsManager) Refuse(id, errorType, message string, deleted bool) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sm.fails[id] = refusal{errorType, message, deleted}
}

// FailAll makes every call answer errorType ("" to stop), e.g.
// "ThrottlingException".
func (sm *SecretsManager) FailAll(errorType string) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sm.fail = errorType
}

// Delay holds every answer back by d.
func (sm *SecretsManager) Delay(d time.Duration) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sm.delay = d
}

// Hang makes the endpoint accept calls and never answer them, as a service
// behind a black-holed route does, until Answer.
func (sm *SecretsManager) Hang() {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	if sm.hung == nil {
		sm.hung = make(chan struct{})
	}
}

// Answer ends a Hang: the calls held are answered.
func (sm *SecretsManager) Answer() {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	if sm.hung != nil {
		close(sm.hung)
		sm.hung = nil
	}
}

// Calls counts the GetSecretValue calls for id.
func (sm *SecretsManager) Calls(id string) int {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	return sm.calls[id]
}

// Total counts every GetSecretValue call.
func (sm *SecretsManager) Total() int {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	return sm.total
}

var messages = map[string]string{
	"ResourceNotFoundException": "Secrets Manager can't find the specified secret.",
	"DecryptionFailure":         "Secrets Manager can't decrypt the protected secret text using the provided KMS key.",
	"InvalidRequestException":   "You can't perform this operation on the secret because it was marked for deletion.",
	"ThrottlingException":       "Rate exceeded",
}

func (sm *SecretsManager) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	if r.Method != http.MethodPost || !strings.HasPrefix(target, "secretsmanager.") ||
		r.Header.Get("Content-Type") != "application/x-amz-json-1.1" || !signed(r) {
		sm.t.Errorf("unexpected request %s %s %v", r.Method, r.URL, r.Header)
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var in struct{ SecretId string }
	json.Unmarshal(body, &in) //nolint:errcheck // moto answers a request it cannot read
	sm.mu.Lock()
	f, failing := sm.fails[in.SecretId]
	if target == "secretsmanager.GetSecretValue" {
		sm.calls[in.SecretId]++
		sm.total++
		if sm.fail != "" {
			f, failing = refusal{errorType: sm.fail, message: messages[sm.fail]}, true
		}
	}
	delay, hung := sm.delay, sm.hung
	sm.mu.Unlock()
	if target == "secretsmanager.GetSecretValue" {
		time.Sleep(delay)
		if hung != nil {
			select {
			case <-hung:
			case <-r.Context().Done():
				return
			}
		}
	}
	switch {
	case failing && target == "secretsmanager.DescribeSecret":
		sm.describe(w, in.SecretId, f.deleted)
	case failing && target == "secretsmanager.GetSecretValue":
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":%q,"message":%q}`, f.errorType, f.message)
	default:
		sm.moto.ServeHTTP(w, r)
	}
}

// describe answers DescribeSecret for an id refused by Refuse.
func (sm *SecretsManager) describe(w http.ResponseWriter, id string, deleted bool) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	out := map[string]any{"ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:" + id + "-AbCdEf", "Name": id}
	if deleted {
		out["DeletedDate"] = 1.7639e9
	}
	json.NewEncoder(w).Encode(out) //nolint:errcheck // the client went away
}
