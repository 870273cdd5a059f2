// Command check holds a deployment, local or in AWS, to its OpenAPI document
// and to the original service's conventions: one line per check, exit
// status 1 when one fails. Read-only unless -write is given. `make check`
// runs it.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/erp-gateway/gateway/shared/gateway"
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
	flag.StringVar(&c.class, "class", gateway.DefaultClass, "interface-class path segment")
	flag.StringVar(&c.openapi, "openapi", "infra/openapi.json", "the deployment's OpenAPI document")
	flag.Var(&found, "found", "a read that finds a record, as a request body or CLAVE:FIELD=VALUE,FIELD=VALUE (repeatable)")
	flag.Var(&missing, "missing", "a read whose procedure raises not-found, written as for -found (repeatable)")
	flag.StringVar(&c.write, "write", "", "a CODIGO that does not exist yet: adds a Set_Terceros round trip (writes!)")
	flag.Parse()
	// flag stops at the first word that is not a flag, and would drop
	// the flags after it without a word.
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "check: %q is not a flag: every value follows its flag\n", flag.Arg(0))
		os.Exit(2)
	}
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
	top, ok := doc.(map[string]any)
	if _, isAPI := top["openapi"]; !ok || !isAPI {
		return 0, fmt.Errorf("%s: not an OpenAPI document (make openapi writes one)", c.openapi)
	}
	k := &checker{c: c, hc: hc, out: out, raw: raw, doc: top, schemas: comp}
	for _, body := range c.found {
		k.found(ctx, body)
	}
	for _, body := range c.missing {
		k.missing(ctx, body)
	}
	if len(c.found)+len(c.missing) > 1 {
		k.batch(ctx, append(append([]string(nil), c.found...), c.missing...))
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
	status, _, answer, err := k.postKeyed(ctx, endpoint, body, token, "")
	return status, answer, err
}

// postKeyed is post with an Idempotency-Key when key is not "", answering
// the response's headers too.
func (k *checker) postKeyed(ctx context.Context, endpoint, body, token, key string, headers ...string) (int, http.Header, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, k.url(endpoint), strings.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := k.hc.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

func claveOf(body string) (string, error) {
	var req struct{ CLAVE string }
	if err := json.Unmarshal([]byte(body), &req); err != nil || req.CLAVE == "" {
		return "", fmt.Errorf("%s is not a request body with a CLAVE", body)
	}
	return req.CLAVE, nil
}
