package awstest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Lambda is a Lambda endpoint for Invoke (restJson1,
// POST /2015-03-31/functions/{FunctionName}/invocations) that hands each
// payload to the test's function and records what was invoked.
type Lambda struct {
	URL string

	mu      sync.Mutex
	invoked []string
}

// Invoke answers one invocation of name (as the caller spelled it, an ARN
// with its version): the function's response payload, and the
// X-Amz-Function-Error value when the function failed ("" otherwise).
type Invoke func(name string, payload []byte) (response []byte, functionError string)

// StartLambda serves a Lambda endpoint until the test ends.
func StartLambda(t testing.TB, invoke Invoke) *Lambda {
	l := &Lambda{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /2015-03-31/functions/{name}/invocations", func(w http.ResponseWriter, r *http.Request) {
		if !signed(r) {
			t.Errorf("unsigned Invoke %s %v", r.URL, r.Header)
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		name, err := url.PathUnescape(r.PathValue("name"))
		if err != nil {
			http.Error(w, "bad name", http.StatusBadRequest)
			return
		}
		if q := r.URL.Query().Get("Qualifier"); q != "" {
			name += ":" + q
		}
		payload, _ := io.ReadAll(r.Body)
		l.mu.Lock()
		l.invoked = append(l.invoked, name)
		l.mu.Unlock()
		resp, fnErr := invoke(name, payload)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amz-Executed-Version", name[strings.LastIndex(name, ":")+1:])
		if fnErr != "" {
			w.Header().Set("X-Amz-Function-Error", fnErr)
		}
		w.Write(resp) //nolint:errcheck // the client went away
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	l.URL = srv.URL
	return l
}

// Invoked lists the function names invoked, in order.
func (l *Lambda) Invoked() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.invoked...)
}

// CodeDeploy is a CodeDeploy endpoint (awsJson 1.1) for
// PutLifecycleEventHookExecutionStatus that records the verdicts.
type CodeDeploy struct {
	URL string

	mu       sync.Mutex
	verdicts []Verdict
}

// Verdict is one PutLifecycleEventHookExecutionStatus call.
type Verdict struct {
	DeploymentID, ExecutionID, Status string
}

// StartCodeDeploy serves a CodeDeploy endpoint until the test ends.
func StartCodeDeploy(t testing.TB) *CodeDeploy {
	c := &CodeDeploy{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("X-Amz-Target") != "CodeDeploy_20141006.PutLifecycleEventHookExecutionStatus" ||
			r.Header.Get("Content-Type") != "application/x-amz-json-1.1" || !signed(r) {
			t.Errorf("unexpected request %s %s %v", r.Method, r.URL, r.Header)
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var in struct {
			DeploymentID string `json:"deploymentId"`
			ExecutionID  string `json:"lifecycleEventHookExecutionId"`
			Status       string `json:"status"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.verdicts = append(c.verdicts, Verdict{in.DeploymentID, in.ExecutionID, in.Status})
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		json.NewEncoder(w).Encode(map[string]string{"lifecycleEventHookExecutionId": in.ExecutionID}) //nolint:errcheck // the client went away
	}))
	t.Cleanup(srv.Close)
	c.URL = srv.URL
	return c
}

// Verdicts lists the verdicts reported, in order.
func (c *CodeDeploy) Verdicts() []Verdict {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Verdict(nil), c.verdicts...)
}

func signed(r *http.Request) bool {
	return strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
}
