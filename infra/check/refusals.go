package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/erp-gateway/gateway/shared/erp"
)

// missing: the original's not-found answer, HTTP 200, cod_error 0 and the
// database's four lines joined by CR LF.
func (k *checker) missing(ctx context.Context, body string) {
	clave, err := claveOf(body)
	if err != nil {
		k.report("missing: "+body, err)
		return
	}
	status, answer, err := k.post(ctx, "executequery", body, k.c.token)
	if err == nil {
		err = notFound(status, answer)
	}
	k.report(clave+": not found answers the database's four lines", err)
}

var atProcedure = regexp.MustCompile(`^At procedure '[A-Z0-9_$]+' line: \d+, col: \d+$`)

func notFound(status int, answer []byte) error {
	var a struct {
		CodError *int    `json:"cod_error"`
		Ex       *string `json:"ex_execsql"`
		Data     any     `json:"data"`
	}
	if status != 200 || json.Unmarshal(answer, &a) != nil || a.CodError == nil || *a.CodError != 0 || a.Ex == nil || a.Data != nil {
		return fmt.Errorf("want HTTP 200, cod_error 0 and ex_execsql alone; got HTTP %d %.200s", status, answer)
	}
	lines := strings.Split(*a.Ex, "\r\n")
	switch {
	case len(lines) != 4:
		return fmt.Errorf("ex_execsql has %d lines separated by CR LF, want 4: %q", len(lines), *a.Ex)
	case !regexp.MustCompile(`exception \d+$`).MatchString(lines[0]):
		return fmt.Errorf("line 1 %q does not end with exception <N>", lines[0])
	case !atProcedure.MatchString(lines[3]):
		return fmt.Errorf("line 4 %q is not At procedure '<NAME>' line: <n>, col: <n>", lines[3])
	}
	return nil
}

// refusals: the codes an integrator meets first.
func (k *checker) refusals(ctx context.Context) {
	read, maxLen, param := k.aReadWithATextParam()
	if read == "" {
		k.report("refusals", errors.New("the document has no read with a required text parameter"))
		return
	}
	checks := []struct {
		name, endpoint, body, token string
		code                        erp.Code
	}{
		{"no token", "executequery", `{"CLAVE":"` + read + `"}`, "", erp.CodeUnauthorized},
		{"unknown CLAVE", "executequery", `{"CLAVE":"No_Existe_En_El_Catalogo"}`, k.c.token, erp.CodeClaveUnknown},
		{"missing required field", "executequery", `{"CLAVE":"` + read + `"}`, k.c.token, erp.CodeParamMissing},
		{"read sent to execute", "execute", `{"CLAVE":"` + read + `"}`, k.c.token, erp.CodeWrongEndpoint},
		{"value too long", "executequery", `{"CLAVE":"` + read + `","` + param + `":"` + strings.Repeat("x", maxLen+1) + `"}`, k.c.token, erp.CodeParamTooLong},
		{"body not JSON", "executequery", `{"CLAVE":`, k.c.token, erp.CodeNotObject},
		{"an empty batch", "executequery", `[]`, k.c.token, erp.CodeBatchEmpty},
		{"a batch's reference to no earlier call", "executequery", `[{"CLAVE":"` + read + `","` + param + `":{"$from":0,"$field":"X"}}]`, k.c.token, erp.CodeReference},
	}
	for _, c := range checks {
		want := c.code.Status()
		status, answer, err := k.post(ctx, c.endpoint, c.body, c.token)
		if err == nil {
			var a struct {
				CodError int    `json:"cod_error"`
				Ex       string `json:"ex_execsql"`
			}
			if status != want || json.Unmarshal(answer, &a) != nil || erp.Code(a.CodError) != c.code || a.Ex == "" {
				err = fmt.Errorf("want HTTP %d, cod_error %d and a message; got HTTP %d %.200s", want, c.code, status, answer)
			}
		}
		k.report(fmt.Sprintf("refusal, %s: %d", c.name, c.code), err)
	}
}

// aReadWithATextParam finds, in the document, a read whose first required
// parameter after CLAVE is text with a maximum length.
func (k *checker) aReadWithATextParam() (clave string, maxLen int, param string) {
	components, _ := k.doc["components"].(map[string]any)
	schemas, _ := components["schemas"].(map[string]any)
	for name, s := range schemas {
		c, ok := strings.CutSuffix(name, ".request")
		if !ok {
			continue
		}
		sm, _ := s.(map[string]any)
		if k.isWrite(c) {
			continue
		}
		req, _ := sm["required"].([]any)
		props, _ := sm["properties"].(map[string]any)
		for _, r := range req {
			name, _ := r.(string)
			p, _ := props[name].(map[string]any)
			if n, ok := p["maxLength"].(json.Number); ok {
				if clave == "" || c < clave {
					v, _ := n.Int64()
					clave, maxLen, param = c, int(v), name
				}
				break
			}
		}
	}
	return clave, maxLen, param
}

func (k *checker) isWrite(clave string) bool {
	paths, _ := k.doc["paths"].(map[string]any)
	for p, item := range paths {
		if !strings.HasSuffix(p, "/execute") {
			continue
		}
		// The single request's discriminator names the writes; a batch on
		// execute may hold reads too.
		schema := k.resolve(dig(item, "post", "requestBody", "content", "application/json", "schema"))
		oneOf, _ := dig(schema, "oneOf").([]any)
		if len(oneOf) > 0 {
			if _, ok := dig(oneOf[0], "discriminator", "mapping", clave).(string); ok {
				return true
			}
		}
	}
	return false
}

// resolve is the schema v refers to, when it is a reference to one of the
// document's components, else v.
func (k *checker) resolve(v any) any {
	ref, _ := dig(v, "$ref").(string)
	name, ok := strings.CutPrefix(ref, "#/components/schemas/")
	if !ok {
		return v
	}
	return dig(k.doc, "components", "schemas", name)
}

// dig walks v's nested objects by key.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
