package functions_test

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/gateway"
)

type samTemplate struct {
	Globals struct {
		Function struct {
			Runtime       string   `yaml:"Runtime"`
			Architectures []string `yaml:"Architectures"`
			Handler       string   `yaml:"Handler"`
			Timeout       int      `yaml:"Timeout"`
		} `yaml:"Function"`
	} `yaml:"Globals"`
	Resources map[string]struct {
		Type     string `yaml:"Type"`
		Metadata struct {
			BuildMethod string `yaml:"BuildMethod"`
		} `yaml:"Metadata"`
		Properties struct {
			Events map[string]struct {
				Type       string `yaml:"Type"`
				Properties struct {
					Path   string `yaml:"Path"`
					Method string `yaml:"Method"`
				} `yaml:"Properties"`
			} `yaml:"Events"`
		} `yaml:"Properties"`
	} `yaml:"Resources"`
}

// TestTemplateMatchesTheHandler fails when template.yaml routes something the
// function's handler does not serve, or misses something it does. Which
// endpoint a function is comes from the Makefile target sam build runs.
func TestTemplateMatchesTheHandler(t *testing.T) {
	raw, err := os.ReadFile("../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var tpl samTemplate
	if err := yaml.Unmarshal(raw, &tpl); err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	g := tpl.Globals.Function
	if g.Runtime != "provided.al2023" || !slices.Equal(g.Architectures, []string{"arm64"}) || g.Handler != "bootstrap" || g.Timeout >= 29 {
		t.Fatalf("function globals %+v", g)
	}

	served := map[catalog.Endpoint]bool{}
	for name, res := range tpl.Resources {
		if res.Type != "AWS::Serverless::Function" {
			continue
		}
		if res.Metadata.BuildMethod != "makefile" {
			t.Fatalf("%s: BuildMethod %q", name, res.Metadata.BuildMethod)
		}
		target := regexp.MustCompile(`(?m)^build-` + name + `:.*\n\t.*-o \$\(ARTIFACTS_DIR\)/bootstrap \./functions/(\w+)$`).FindSubmatch(makefile)
		if target == nil {
			t.Fatalf("%s: no Makefile target build-%s building ./functions/<endpoint>", name, name)
		}
		endpoint := catalog.Endpoint(target[1])
		served[endpoint] = true

		var routes []string
		for _, ev := range res.Properties.Events {
			if ev.Type != "Api" {
				t.Fatalf("%s: event of type %s", name, ev.Type)
			}
			routes = append(routes, ev.Properties.Method+" "+ev.Properties.Path)
		}
		want := gateway.New(gateway.Config{Endpoints: []catalog.Endpoint{endpoint}}, catalog.Default(), nil, nil, nil).Routes()
		slices.Sort(routes)
		slices.Sort(want)
		if !slices.Equal(routes, want) {
			t.Errorf("%s (functions/%s): template routes %q, handler serves %q", name, endpoint, routes, want)
		}
	}
	for _, e := range []catalog.Endpoint{catalog.ExecuteQuery, catalog.Execute} {
		if !served[e] {
			t.Errorf("no function in template.yaml serves %s", e)
		}
	}
}

// TestGatewayResponsesUseTheCatalogCodes holds API Gateway's own refusals in
// template.yaml to the documented error codes.
func TestGatewayResponsesUseTheCatalogCodes(t *testing.T) {
	raw, err := os.ReadFile("../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var tpl struct {
		Resources struct {
			Api struct {
				Properties struct {
					GatewayResponses map[string]struct {
						ResponseTemplates map[string]string `yaml:"ResponseTemplates"`
					} `yaml:"GatewayResponses"`
				} `yaml:"Properties"`
			} `yaml:"Api"`
		} `yaml:"Resources"`
	}
	if err := yaml.Unmarshal(raw, &tpl); err != nil {
		t.Fatal(err)
	}
	want := map[string]catalog.Code{"DEFAULT_4XX": catalog.CodeNotFound, "DEFAULT_5XX": catalog.CodeUnavailable, "THROTTLED": catalog.CodeThrottled}
	got := tpl.Resources.Api.Properties.GatewayResponses
	if len(got) != len(want) {
		t.Fatalf("gateway responses %v", got)
	}
	for kind, code := range want {
		body := got[kind].ResponseTemplates["application/json"]
		if !strings.HasPrefix(body, fmt.Sprintf(`{"cod_error":%d,"ex_execsql":`, code)) {
			t.Errorf("%s answers %s, want cod_error %d", kind, body, code)
		}
	}
}
