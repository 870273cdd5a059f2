package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/gateway"
)

// FuzzArguments: whatever values a call's fields hold, the real database
// answers through the handler with a JSON answer or a JSON refusal with its
// code: never a 5xx (the database is up and nothing waits for a lock), never
// a body that is not JSON. Where FuzzHandler stops before the database, this
// one reaches it: every operation of the test catalog whose procedure the
// demo database's schema has, one call or a batch of two whose second names the
// first's answer. Each of v1, v2 and v3 is a JSON value when it parses as
// one and a JSON string otherwise; the i-th field gets the i-th of them in
// turn.
func FuzzArguments(f *testing.F) {
	cfg := fbtest.Demo(f)
	e := newEnv(f, gateway.Config{Timeout: 5 * time.Second, BatchTimeout: 10 * time.Second}, map[string]any{"demo": anonymous(cfg)})
	have := map[string]bool{}
	rows, err := fbtest.Open(f, cfg).Query(`SELECT TRIM(RDB$PROCEDURE_NAME) FROM RDB$PROCEDURES`)
	if err != nil {
		f.Fatal(err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			f.Fatal(err)
		}
		have[name] = true
	}
	if err := rows.Err(); err != nil {
		f.Fatal(err)
	}
	if err := rows.Close(); err != nil {
		f.Fatal(err)
	}
	var ops []catalog.Operation
	for _, op := range testOperations() {
		procs := []string{op.Procedure}
		if op.ReadBack != nil {
			procs = append(procs, op.ReadBack.Procedure)
		}
		// The procedures other tests create (REST_TEST_*) come and go
		// with the order the tests run in, and one of them waits for a lock.
		if !slices.ContainsFunc(procs, func(p string) bool { return !have[p] || strings.HasPrefix(p, "REST_TEST_") }) {
			ops = append(ops, op)
		}
	}
	if len(ops) < 4 {
		f.Fatalf("%d operations of the test catalog have their procedures in the demo database", len(ops))
	}
	for _, seed := range []struct {
		op         uint8
		batch      bool
		v1, v2, v3 string
	}{
		{0, false, "REF0001", "", ""},
		{1, true, `"900"`, "1e400", "null"},
		{2, false, `{"$from":0}`, "-0", "99999999999999999999999"},
		{3, true, "ñandú \u00a0\u200b'\"--", `[1,2]`, "true"},
		{4, false, "31.02.2026", "0.00001", `"\ud800"`},
		{5, true, strings.Repeat("x", 300), "-9223372036854775809", `{"$from":1,"$field":"CODIGO"}`},
	} {
		f.Add(seed.op, seed.batch, seed.v1, seed.v2, seed.v3)
	}
	f.Fuzz(func(t *testing.T, pick uint8, batch bool, v1, v2, v3 string) {
		values := []json.RawMessage{value(v1), value(v2), value(v3)}
		op := ops[int(pick)%len(ops)]
		call := fields(op, values, 0)
		body, endpoint := call, string(op.Endpoint)
		if batch {
			next := ops[(int(pick)+1)%len(ops)]
			if next.Endpoint != op.Endpoint {
				next = op
			}
			body = "[" + call + "," + fields(next, values, 1) + "]"
		}
		req, err := http.NewRequest(http.MethodPost, "http://gateway.test"+path("demo", endpoint), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		if rec.Code >= 500 || rec.Code < 200 {
			t.Fatalf("%s: HTTP %d %s", body, rec.Code, rec.Body)
		}
		type answer struct {
			CodError *int `json:"cod_error"`
		}
		var answers []answer // a batch that ran answers one per call
		if rec.Code != http.StatusOK || !batch {
			answers = make([]answer, 1)
			err = json.Unmarshal(rec.Body.Bytes(), &answers[0])
		} else {
			err = json.Unmarshal(rec.Body.Bytes(), &answers)
		}
		if err != nil {
			t.Fatalf("%s: HTTP %d, not JSON: %q", body, rec.Code, rec.Body)
		}
		for _, a := range answers {
			if a.CodError == nil {
				t.Fatalf("%s: HTTP %d without a code: %s", body, rec.Code, rec.Body)
			}
		}
	})
}

// value is s as a JSON value when it is one, else s as a JSON string.
func value(s string) json.RawMessage {
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// fields is op's call with its i-th parameter set to values[(i+shift)%3].
func fields(op catalog.Operation, values []json.RawMessage, shift int) string {
	var b strings.Builder
	b.WriteString(`{"CLAVE":` + strconv.Quote(op.Clave))
	for i, p := range op.Params {
		b.WriteString("," + strconv.Quote(p.Name) + ":")
		b.Write(values[(i+shift)%len(values)])
	}
	b.WriteString("}")
	return b.String()
}
