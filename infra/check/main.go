// Command check holds a deployment, local or in AWS, to its OpenAPI document
// and to the original service's conventions: one line per check, exit
// status 1 when one fails. Read-only unless -write is given. `make check`
// runs it.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

type config struct {
	base, instance, token, class, openapi string
	found, missing                        []string // request bodies
	write                                 string   // a new CODIGO for a Set_Terceros round trip
}

type list []string

func (l *list) String() string     { return strings.Join(*l, " ") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var c config
	var found, missing list
	flag.StringVar(&c.base, "base", "http://127.0.0.1:3000", "base URL, before /{instance}")
	flag.StringVar(&c.instance, "instance", "demo", "instance")
	flag.StringVar(&c.token, "token", "", "the instance's bearer token")
	flag.StringVar(&c.class, "class", "TServiceRestInterface", "interface-class path segment")
	flag.StringVar(&c.openapi, "openapi", "infra/openapi.json", "the deployment's OpenAPI document")
	flag.Var(&found, "found", "a read that finds a record, as a request body or CLAVE:FIELD=VALUE,FIELD=VALUE (repeatable)")
	flag.Var(&missing, "missing", "a read whose procedure raises not-found, written as for -found (repeatable)")
	flag.StringVar(&c.write, "write", "", "a CODIGO that does not exist yet: adds a Set_Terceros round trip (writes!)")
	flag.Parse()
	for _, l := range []struct {
		from list
		to   *[]string
	}{{found, &c.found}, {missing, &c.missing}} {
		for _, v := range l.from {
			body, err := requestBody(v)
			if err != nil {
				fmt.Fprintln(os.Stderr, "check:", err)
				os.Exit(2)
			}
			*l.to = append(*l.to, body)
		}
	}
	failed, err := run(context.Background(), c, http.DefaultClient, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "check:", err)
		os.Exit(2)
	}
	if failed > 0 {
		os.Exit(1)
	}
}

// requestBody takes a body as it is, or writes one from
// CLAVE:FIELD=VALUE,FIELD=VALUE.
func requestBody(v string) (string, error) {
	if strings.HasPrefix(v, "{") {
		return v, nil
	}
	clave, fields, ok := strings.Cut(v, ":")
	if !ok || clave == "" {
		return "", fmt.Errorf("%q is neither a JSON body nor CLAVE:FIELD=VALUE,FIELD=VALUE", v)
	}
	body := map[string]string{"CLAVE": clave}
	for f := range strings.SplitSeq(fields, ",") {
		name, value, ok := strings.Cut(f, "=")
		if !ok {
			return "", fmt.Errorf("%q: %q is not FIELD=VALUE", v, f)
		}
		body[name] = value
	}
	b, err := json.Marshal(body)
	return string(b), err
}

// checker runs the checks and prints a line for each.
type checker struct {
	c       config
	hc      *http.Client
	out     io.Writer
	raw     []byte // the document, whose key order gives the columns' order
	doc     map[string]any
	schemas *jsonschema.Compiler
	failed  int
}

func run(ctx context.Context, c config, hc *http.Client, out io.Writer) (int, error) {
	raw, err := os.ReadFile(c.openapi)
	if err != nil {
		return 0, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", c.openapi, err)
	}
	comp := jsonschema.NewCompiler()
	if err := comp.AddResource("https://erp-gateway.example/openapi.json", doc); err != nil {
		return 0, err
	}
	k := &checker{c: c, hc: hc, out: out, raw: raw, doc: doc.(map[string]any), schemas: comp}
	for _, body := range c.found {
		k.found(ctx, body)
	}
	for _, body := range c.missing {
		k.missing(ctx, body)
	}
	k.refusals(ctx)
	if c.write != "" {
		k.writeRoundTrip(ctx)
	}
	return k.failed, nil
}

func (k *checker) report(name string, err error) {
	status := "PASS"
	detail := ""
	if err != nil {
		status, detail = "FAIL", "  "+err.Error()
		k.failed++
	}
	fmt.Fprintf(k.out, "%s  %-58s%s\n", status, name, detail)
}

func (k *checker) url(endpoint string) string {
	return strings.TrimRight(k.c.base, "/") + "/" + k.c.instance + "/RestServerIsapi.dll/api/v1/" + k.c.class + "/" + endpoint
}

func (k *checker) post(ctx context.Context, endpoint, body, token string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, k.url(endpoint), strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := k.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func (k *checker) schema(name string) (*jsonschema.Schema, error) {
	return k.schemas.Compile("https://erp-gateway.example/openapi.json#/components/schemas/" + name)
}

// columns is a schema's row properties in the document's order, with each
// one's declared Firebird type.
func (k *checker) columns(clave string) (names, types []string) {
	// The document's key order is the columns' order: read it with a
	// decoder that keeps it.
	dec := json.NewDecoder(bytes.NewReader(k.raw))
	path := []string{"components", "schemas", clave + ".answer", "properties", "data", "items", "properties"}
	if !seek(dec, path) {
		return nil, nil
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return names, types
		}
		name, _ := tok.(string)
		var col struct {
			Type string `json:"x-firebird-type"`
		}
		if dec.Decode(&col) != nil {
			return names, types
		}
		names, types = append(names, name), append(types, col.Type)
	}
	return names, types
}

// seek moves dec into the object at path.
func seek(dec *json.Decoder, path []string) bool {
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	for len(path) > 0 {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		key, ok := t.(string)
		if !ok {
			return false
		}
		if key != path[0] {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return false
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return false
		}
		path = path[1:]
	}
	return true
}

func claveOf(body string) (string, error) {
	var req struct{ CLAVE string }
	if err := json.Unmarshal([]byte(body), &req); err != nil || req.CLAVE == "" {
		return "", fmt.Errorf("%s is not a request body with a CLAVE", body)
	}
	return req.CLAVE, nil
}

var numericScale = regexp.MustCompile(`^(NUMERIC|DECIMAL)\(\d+,(\d+)\)$`)

// found: HTTP 200, the answer fits its schema, keys in the procedure's
// order, exact numbers with their declared scale.
func (k *checker) found(ctx context.Context, body string) {
	clave, err := claveOf(body)
	if err != nil {
		k.report("found: "+body, err)
		return
	}
	name := clave + ": a record that exists"
	status, answer, err := k.post(ctx, "executequery", body, k.c.token)
	if err == nil && status != 200 {
		err = fmt.Errorf("HTTP %d: %.200s", status, answer)
	}
	if err == nil {
		err = k.fitsAnswer(clave, answer)
	}
	k.report(name, err)
	if err != nil {
		return
	}
	names, types := k.columns(clave)
	k.report(clave+": columns in the procedure's order", keyOrder(answer, names))
	k.report(clave+": NUMERIC columns keep their scale", scales(answer, names, types))
}

func (k *checker) fitsAnswer(clave string, answer []byte) error {
	s, err := k.schema(clave + ".answer")
	if err != nil {
		return fmt.Errorf("the document has no answer schema for %s: %w", clave, err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(answer))
	if err != nil {
		return fmt.Errorf("not JSON: %.200s", answer)
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("does not fit the document: %s", oneLine(err.Error()))
	}
	var a struct{ Data []json.RawMessage }
	if json.Unmarshal(answer, &a) != nil || len(a.Data) == 0 {
		return errors.New("no rows")
	}
	return nil
}

// rows gives each row's keys and raw values in the answer's order.
func rows(answer []byte) ([][]string, [][]string, error) {
	dec := json.NewDecoder(bytes.NewReader(answer))
	dec.UseNumber()
	if !seekArray(dec, "data") {
		return nil, nil, errors.New("no data array")
	}
	var keys, values [][]string
	for dec.More() {
		var row []string
		var vals []string
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return nil, nil, errors.New("a row is not an object")
		}
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return nil, nil, err
			}
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return nil, nil, err
			}
			row, vals = append(row, t.(string)), append(vals, string(v))
		}
		dec.Token() //nolint:errcheck // the closing brace
		keys, values = append(keys, row), append(values, vals)
	}
	return keys, values, nil
}

func seekArray(dec *json.Decoder, key string) bool {
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		if t == key {
			t, err := dec.Token()
			return err == nil && t == json.Delim('[')
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return false
}

func keyOrder(answer []byte, names []string) error {
	keys, _, err := rows(answer)
	if err != nil {
		return err
	}
	for i, row := range keys {
		if strings.Join(row, ",") != strings.Join(names, ",") {
			return fmt.Errorf("row %d has keys %s; the procedure's order is %s", i+1, abbreviate(row), abbreviate(names))
		}
	}
	return nil
}

func scales(answer []byte, names, types []string) error {
	_, values, err := rows(answer)
	if err != nil {
		return err
	}
	for i, row := range values {
		for j, v := range row {
			if j >= len(types) || v == "null" {
				continue
			}
			m := numericScale.FindStringSubmatch(types[j])
			if m == nil {
				continue
			}
			scale, _ := strconv.Atoi(m[2])
			got := 0
			if _, frac, ok := strings.Cut(v, "."); ok {
				got = len(frac)
			}
			if got != scale {
				return fmt.Errorf("row %d: %s is %s, written with %d decimals; %s has %d (rounded through a float?)", i+1, names[j], v, got, types[j], scale)
			}
		}
	}
	return nil
}

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
		status, code                int
	}{
		{"no token: 401", "executequery", `{"CLAVE":"` + read + `"}`, "", 401, 1105},
		{"unknown CLAVE: 1004", "executequery", `{"CLAVE":"No_Existe_En_El_Catalogo"}`, k.c.token, 400, 1004},
		{"missing required field: 1006", "executequery", `{"CLAVE":"` + read + `"}`, k.c.token, 400, 1006},
		{"read sent to execute: 1005", "execute", `{"CLAVE":"` + read + `"}`, k.c.token, 400, 1005},
		{"value too long: 1008", "executequery", `{"CLAVE":"` + read + `","` + param + `":"` + strings.Repeat("x", maxLen+1) + `"}`, k.c.token, 400, 1008},
		{"body not JSON: 1001", "executequery", `{"CLAVE":`, k.c.token, 400, 1001},
	}
	for _, c := range checks {
		status, answer, err := k.post(ctx, c.endpoint, c.body, c.token)
		if err == nil {
			var a struct {
				CodError int    `json:"cod_error"`
				Ex       string `json:"ex_execsql"`
			}
			if status != c.status || json.Unmarshal(answer, &a) != nil || a.CodError != c.code || a.Ex == "" {
				err = fmt.Errorf("want HTTP %d, cod_error %d and a message; got HTTP %d %.200s", c.status, c.code, status, answer)
			}
		}
		k.report("refusal, "+c.name, err)
	}
}

// aReadWithATextParam finds, in the document, a read whose first required
// parameter after CLAVE is text with a maximum length.
func (k *checker) aReadWithATextParam() (clave string, maxLen int, param string) {
	schemas, _ := k.doc["components"].(map[string]any)["schemas"].(map[string]any)
	for name, s := range schemas {
		c, ok := strings.CutSuffix(name, ".request")
		if !ok {
			continue
		}
		sm := s.(map[string]any)
		if k.isWrite(c) {
			continue
		}
		req, _ := sm["required"].([]any)
		props, _ := sm["properties"].(map[string]any)
		for _, r := range req {
			p, _ := props[r.(string)].(map[string]any)
			if n, ok := p["maxLength"].(json.Number); ok {
				if clave == "" || c < clave {
					v, _ := n.Int64()
					clave, maxLen, param = c, int(v), r.(string)
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
		b, _ := json.Marshal(item)
		if strings.Contains(string(b), `"`+clave+`"`) {
			return true
		}
	}
	return false
}

// writeRoundTrip inserts a third party with Set_Terceros, checks the
// read-back fits its schema, and that the same insert again is refused by
// the database.
func (k *checker) writeRoundTrip(ctx context.Context) {
	body := `{"CLAVE":"Set_Terceros","CODIGO":"` + k.c.write + `","DV":"0","NATURALEZA":"N","NOM1":"Contrato","APL1":"Prueba","RAZON_COMERCIAL":"Prueba de contrato","DIRECCION":"Calle 1","CODIDENTIDAD":"CC","CODSOCIEDAD":"PN","CODPAIS":"CO","CODMUNICIPIO":"11001"}`
	status, answer, err := k.post(ctx, "execute", body, k.c.token)
	if err == nil && status != 200 {
		err = fmt.Errorf("HTTP %d: %.200s", status, answer)
	}
	if err == nil {
		err = k.fitsAnswer("Set_Terceros", answer)
	}
	k.report("Set_Terceros: a new third party, answered by its read-back", err)
	status, answer, err = k.post(ctx, "execute", body, k.c.token)
	if err == nil && (status != 200 || !bytes.Contains(answer, []byte(`"ex_execsql"`))) {
		err = fmt.Errorf("want the database's refusal, HTTP 200; got HTTP %d %.200s", status, answer)
	}
	k.report("Set_Terceros: the same again is the database's refusal", err)
}

func abbreviate(keys []string) string {
	if len(keys) > 4 {
		return strings.Join(keys[:4], ",") + ",…"
	}
	return strings.Join(keys, ",")
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
