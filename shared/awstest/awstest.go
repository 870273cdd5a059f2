// Package awstest gives tests AWS endpoints that speak the services'
// protocols (SigV4-signed requests): Secrets Manager's GetSecretValue and
// DescribeSecret,
// Lambda's Invoke and CodeDeploy's PutLifecycleEventHookExecutionStatus, so
// the real AWS SDK talks to them over HTTP.
package awstest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// SecretsManager stores secrets by id and counts the calls per id.
type SecretsManager struct {
	URL string

	t       testing.TB
	mu      sync.Mutex
	secrets map[string]string
	fails   map[string]refusal // id -> the AWS error answered instead
	calls   map[string]int
	total   int
	fail    string // error type answered for every id
	delay   time.Duration
	hung    chan struct{} // closed when the endpoint answers again
}

// Start serves a Secrets Manager endpoint until the test ends. With env,
// it points the standard AWS environment of the test process at it.
func Start(t testing.TB, env bool) *SecretsManager {
	sm := &SecretsManager{t: t, secrets: map[string]string{}, fails: map[string]refusal{}, calls: map[string]int{}}
	srv := httptest.NewServer(sm)
	t.Cleanup(srv.Close)
	sm.URL = srv.URL
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

// Put stores a secret.
func (sm *SecretsManager) Put(id, value string) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sm.secrets[id] = value
	delete(sm.fails, id)
}

// PutJSON stores v, marshalled, as a secret.
func (sm *SecretsManager) PutJSON(id string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		sm.t.Fatal(err)
	}
	sm.Put(id, string(b))
}

// refusal is an AWS error GetSecretValue answers for an id, and whether
// DescribeSecret says the secret is scheduled for deletion.
type refusal struct {
	errorType, message string
	deleted            bool
}

// Fail makes GetSecretValue of id answer an AWS error: "DecryptionFailure",
// "InvalidRequestException" (a secret scheduled for deletion, as
// DescribeSecret then says), ...
func (sm *SecretsManager) Fail(id, errorType string) {
	sm.Refuse(id, errorType, messages[errorType], errorType == "InvalidRequestException")
}

// Refuse makes GetSecretValue of id answer errorType with message, and
// DescribeSecret say whether it is scheduled for deletion.
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
	if r.Method != http.MethodPost || (target != "secretsmanager.GetSecretValue" && target != "secretsmanager.DescribeSecret") ||
		r.Header.Get("Content-Type") != "application/x-amz-json-1.1" ||
		!signed(r) {
		sm.t.Errorf("unexpected request %s %s %v", r.Method, r.URL, r.Header)
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var in struct{ SecretId string }
	json.NewDecoder(r.Body).Decode(&in) //nolint:errcheck // an empty id is not found
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if target == "secretsmanager.DescribeSecret" {
		sm.describe(w, in.SecretId)
		return
	}
	sm.mu.Lock()
	sm.calls[in.SecretId]++
	sm.total++
	secret, ok := sm.secrets[in.SecretId]
	fail := refusal{errorType: sm.fail, message: messages[sm.fail]}
	if f, failing := sm.fails[in.SecretId]; failing {
		fail = f
	}
	delay, hung := sm.delay, sm.hung
	sm.mu.Unlock()
	time.Sleep(delay)
	if hung != nil {
		select {
		case <-hung:
		case <-r.Context().Done():
			return
		}
	}

	if !ok && fail.errorType == "" {
		fail = refusal{errorType: "ResourceNotFoundException", message: messages["ResourceNotFoundException"]}
	}
	if fail.errorType != "" {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":%q,"message":%q}`, fail.errorType, fail.message)
		return
	}
	json.NewEncoder(w).Encode(map[string]any{ //nolint:errcheck // the client went away
		"ARN":  "arn:aws:secretsmanager:us-east-1:123456789012:secret:" + in.SecretId + "-AbCdEf",
		"Name": in.SecretId, "SecretString": secret, "VersionId": "6c1f3a52-0000-4000-8000-000000000001",
		"VersionStages": []string{"AWSCURRENT"}, "CreatedDate": 1.7639e9,
	})
}

// describe answers DescribeSecret: the secret's name and, when it is
// scheduled for deletion, its DeletedDate.
func (sm *SecretsManager) describe(w http.ResponseWriter, id string) {
	sm.mu.Lock()
	_, ok := sm.secrets[id]
	f, failing := sm.fails[id]
	sm.mu.Unlock()
	if !ok && !failing {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":"ResourceNotFoundException","message":%q}`, messages["ResourceNotFoundException"])
		return
	}
	out := map[string]any{"ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:" + id + "-AbCdEf", "Name": id}
	if f.deleted {
		out["DeletedDate"] = 1.7639e9
	}
	json.NewEncoder(w).Encode(out) //nolint:errcheck // the client went away
}
