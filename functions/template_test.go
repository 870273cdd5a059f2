package functions_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"reflect"
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
		want := gateway.New(gateway.Config{Endpoints: []catalog.Endpoint{endpoint}}, catalog.Default(), nil, nil, nil, nil).Routes()
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

// TestTemplateGatewayResponsesUseTheCatalogCodes holds API Gateway's own
// refusals in template.yaml to the documented error codes and statuses.
func TestTemplateGatewayResponsesUseTheCatalogCodes(t *testing.T) {
	raw, err := os.ReadFile("../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var tpl struct {
		Resources struct {
			Api struct {
				Properties struct {
					GatewayResponses map[string]struct {
						StatusCode        string            `yaml:"StatusCode"`
						ResponseTemplates map[string]string `yaml:"ResponseTemplates"`
					} `yaml:"GatewayResponses"`
				} `yaml:"Properties"`
			} `yaml:"Api"`
		} `yaml:"Resources"`
	}
	if err := yaml.Unmarshal(raw, &tpl); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		status string // "" keeps API Gateway's own status
		code   catalog.Code
	}
	want := map[string]answer{
		"DEFAULT_4XX":     {"", catalog.CodeNotFound},
		"DEFAULT_5XX":     {"", catalog.CodeUnavailable},
		"THROTTLED":       {"429", catalog.CodeThrottled},
		"QUOTA_EXCEEDED":  {"429", catalog.CodeThrottled},
		"API_KEY_INVALID": {"403", catalog.CodeUnauthorized},
	}
	got := tpl.Resources.Api.Properties.GatewayResponses
	if len(got) != len(want) {
		t.Fatalf("gateway responses %v", got)
	}
	for kind, w := range want {
		body := got[kind].ResponseTemplates["application/json"]
		if !strings.HasPrefix(body, fmt.Sprintf(`{"cod_error":%d,"ex_execsql":`, w.code)) {
			t.Errorf("%s answers %s, want cod_error %d", kind, body, w.code)
		}
		if got[kind].StatusCode != w.status {
			t.Errorf("%s answers status %q, want %q", kind, got[kind].StatusCode, w.status)
		}
	}
}

// cfnTemplate is template.yaml as CloudFormation reads it: plain maps, lists
// and scalars, with the short forms (!Ref, !If, !Sub, ...) in their long form.
func cfnTemplate(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile("../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(raw, &root); err != nil {
		t.Fatal(err)
	}
	v, err := cfnValue(&root)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("template.yaml is not a mapping")
	}
	return m
}

func cfnValue(n *yaml.Node) (any, error) {
	var v any
	switch n.Kind {
	case yaml.DocumentNode:
		return cfnValue(n.Content[0])
	case yaml.AliasNode:
		return cfnValue(n.Alias)
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			val, err := cfnValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = val
		}
		v = m
	case yaml.SequenceNode:
		s := []any{}
		for _, c := range n.Content {
			val, err := cfnValue(c)
			if err != nil {
				return nil, err
			}
			s = append(s, val)
		}
		v = s
	case yaml.ScalarNode:
		if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
			v = n.Value
		} else if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
	}
	fn, short := strings.CutPrefix(n.Tag, "!")
	if !short || strings.HasPrefix(fn, "!") {
		return v, nil
	}
	switch fn {
	case "Ref", "Condition":
		return map[string]any{fn: v}, nil
	case "GetAtt":
		if s, ok := v.(string); ok {
			resource, attribute, _ := strings.Cut(s, ".")
			return map[string]any{"Fn::GetAtt": []any{resource, attribute}}, nil
		}
	}
	return map[string]any{"Fn::" + fn: v}, nil
}

// tplAt walks maps by key and lists by index; nil where the path leads nowhere.
func tplAt(v any, path ...any) any {
	for _, step := range path {
		switch s := step.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[s]
		case int:
			l, ok := v.([]any)
			if !ok || s >= len(l) {
				return nil
			}
			v = l[s]
		}
	}
	return v
}

func cfnRef(name string) map[string]any { return map[string]any{"Ref": name} }

func cfnIf(condition string, then, otherwise any) map[string]any {
	return map[string]any{"Fn::If": []any{condition, then, otherwise}}
}

func tplSame(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s is %#v, want %#v", what, got, want)
	}
}

// tplEventRoutes maps each "METHOD path" of the functions' Api events to the
// function serving it.
func tplEventRoutes(tpl map[string]any) map[string]string {
	routes := map[string]string{}
	for name, res := range tplAt(tpl, "Resources").(map[string]any) {
		if tplAt(res, "Type") != "AWS::Serverless::Function" {
			continue
		}
		events, _ := tplAt(res, "Properties", "Events").(map[string]any)
		for _, ev := range events {
			method, _ := tplAt(ev, "Properties", "Method").(string)
			path, _ := tplAt(ev, "Properties", "Path").(string)
			routes[strings.ToUpper(method)+" "+path] = name
		}
	}
	return routes
}

// TestTemplateEdgeProtections holds the optional protections in front of the
// functions to the parameters that switch them, and to defaults under which
// an existing deployment answers as before.
func TestTemplateEdgeProtections(t *testing.T) {
	tpl := cfnTemplate(t)
	throttled := tplAt(tpl, "Resources", "Api", "Properties", "GatewayResponses", "THROTTLED", "ResponseTemplates", "application/json")
	noValue := cfnRef("AWS::NoValue")
	keyRequired := cfnIf("UseApiKey", []any{map[string]any{"api_key": []any{}}}, noValue)

	for _, tc := range []struct {
		name  string
		check func(t *testing.T)
	}{
		{"parameters default to off", func(t *testing.T) {
			for _, p := range []struct {
				name string
				key  string
				want any
			}{
				{"WafRateLimit", "Type", "Number"},
				{"WafRateLimit", "Default", 0},
				{"WafRateLimit", "MinValue", 0},
				{"RequireApiKey", "Default", "false"},
				{"RequireApiKey", "AllowedValues", []any{"true", "false"}},
				{"ApiKeyRateLimit", "Type", "Number"},
				{"ApiKeyBurstLimit", "Type", "Number"},
				{"ApiKeyQuotaPerDay", "Type", "Number"},
				{"ApiKeyQuotaPerDay", "Default", 0},
			} {
				tplSame(t, "Parameters."+p.name+"."+p.key, tplAt(tpl, "Parameters", p.name, p.key), p.want)
			}
		}},
		{"conditions follow the parameters", func(t *testing.T) {
			// A Number parameter's Ref is a string: compare with "0".
			for name, want := range map[string]any{
				"UseWaf":    map[string]any{"Fn::Not": []any{map[string]any{"Fn::Equals": []any{cfnRef("WafRateLimit"), "0"}}}},
				"UseApiKey": map[string]any{"Fn::Equals": []any{cfnRef("RequireApiKey"), "true"}},
				"UseApiKeyQuota": map[string]any{"Fn::And": []any{
					map[string]any{"Condition": "UseApiKey"},
					map[string]any{"Fn::Not": []any{map[string]any{"Fn::Equals": []any{cfnRef("ApiKeyQuotaPerDay"), "0"}}}},
				}},
				"UseDomain": map[string]any{"Fn::Not": []any{map[string]any{"Fn::Equals": []any{cfnRef("DomainName"), ""}}}},
			} {
				tplSame(t, "Conditions."+name, tplAt(tpl, "Conditions", name), want)
			}
		}},
		{"web ACL: per-IP rate rule answering 429 in the gateway's shape", func(t *testing.T) {
			acl := tplAt(tpl, "Resources", "WebAcl")
			tplSame(t, "WebAcl.Type", tplAt(acl, "Type"), "AWS::WAFv2::WebACL")
			tplSame(t, "WebAcl.Condition", tplAt(acl, "Condition"), "UseWaf")
			tplSame(t, "WebAcl.Scope", tplAt(acl, "Properties", "Scope"), "REGIONAL")
			tplSame(t, "WebAcl.DefaultAction", tplAt(acl, "Properties", "DefaultAction"), map[string]any{"Allow": map[string]any{}})
			rules, _ := tplAt(acl, "Properties", "Rules").([]any)
			if len(rules) != 1 {
				t.Fatalf("WebAcl rules %#v, want the one rate-based rule", rules)
			}
			tplSame(t, "rate statement", tplAt(rules[0], "Statement", "RateBasedStatement"), map[string]any{
				"Limit": cfnRef("WafRateLimit"), "AggregateKeyType": "IP", "EvaluationWindowSec": 300,
			})
			block := tplAt(rules[0], "Action", "Block", "CustomResponse")
			tplSame(t, "blocked status", tplAt(block, "ResponseCode"), 429)
			key, _ := tplAt(block, "CustomResponseBodyKey").(string)
			body := tplAt(acl, "Properties", "CustomResponseBodies", key)
			tplSame(t, "blocked content type", tplAt(body, "ContentType"), "APPLICATION_JSON")
			content, _ := tplAt(body, "Content").(string)
			var answer struct {
				Code    catalog.Code `json:"cod_error"`
				Message string       `json:"ex_execsql"`
			}
			if err := json.Unmarshal([]byte(content), &answer); err != nil || answer.Code != catalog.CodeThrottled || answer.Message == "" {
				t.Errorf("blocked body %q (%v), want cod_error %d and a message", content, err, catalog.CodeThrottled)
			}
			// One answer for "too many requests", whoever refuses.
			tplSame(t, "blocked body", content, throttled)
		}},
		{"web ACL is associated with the stage", func(t *testing.T) {
			assoc := tplAt(tpl, "Resources", "WebAclAssociation")
			tplSame(t, "WebAclAssociation.Type", tplAt(assoc, "Type"), "AWS::WAFv2::WebACLAssociation")
			tplSame(t, "WebAclAssociation.Condition", tplAt(assoc, "Condition"), "UseWaf")
			tplSame(t, "WebAclAssociation.WebACLArn", tplAt(assoc, "Properties", "WebACLArn"), map[string]any{"Fn::GetAtt": []any{"WebAcl", "Arn"}})
			// ${Api.Stage} (SAM's name for the stage) also orders the
			// association after the stage.
			tplSame(t, "WebAclAssociation.ResourceArn", tplAt(assoc, "Properties", "ResourceArn"),
				map[string]any{"Fn::Sub": "arn:${AWS::Partition}:apigateway:${AWS::Region}::/restapis/${Api}/stages/${Api.Stage}"})
		}},
		{"usage plan throttles and limits each key from the parameters", func(t *testing.T) {
			plan := tplAt(tpl, "Resources", "UsagePlan")
			tplSame(t, "UsagePlan.Type", tplAt(plan, "Type"), "AWS::ApiGateway::UsagePlan")
			tplSame(t, "UsagePlan.Condition", tplAt(plan, "Condition"), "UseApiKey")
			tplSame(t, "UsagePlan.ApiStages", tplAt(plan, "Properties", "ApiStages"), []any{map[string]any{"ApiId": cfnRef("Api"), "Stage": cfnRef("Api.Stage")}})
			tplSame(t, "UsagePlan.Throttle", tplAt(plan, "Properties", "Throttle"), map[string]any{"RateLimit": cfnRef("ApiKeyRateLimit"), "BurstLimit": cfnRef("ApiKeyBurstLimit")})
			tplSame(t, "UsagePlan.Quota", tplAt(plan, "Properties", "Quota"),
				cfnIf("UseApiKeyQuota", map[string]any{"Limit": cfnRef("ApiKeyQuotaPerDay"), "Period": "DAY"}, noValue))
			tplSame(t, "Outputs.UsagePlanId", tplAt(tpl, "Outputs", "UsagePlanId", "Condition"), "UseApiKey")
			tplSame(t, "Outputs.UsagePlanId", tplAt(tpl, "Outputs", "UsagePlanId", "Value"), cfnRef("UsagePlan"))
		}},
		{"every route, and only the routes, may require an API key", func(t *testing.T) {
			api := tplAt(tpl, "Resources", "Api", "Properties")
			if tplAt(api, "Auth") != nil {
				t.Errorf("Api.Auth is set: SAM reads it at transform time, where RequireApiKey has no effect")
			}
			tplSame(t, "Api.MergeDefinitions", tplAt(api, "MergeDefinitions"), true)
			// The deployment's name hashes the definition as written, not as
			// resolved: without this, flipping RequireApiKey changes nothing live.
			tplSame(t, "Api.AlwaysDeploy", tplAt(api, "AlwaysDeploy"), true)
			tplSame(t, "securityDefinitions.api_key", tplAt(api, "DefinitionBody", "securityDefinitions", "api_key"),
				map[string]any{"type": "apiKey", "name": "x-api-key", "in": "header"})
			paths, _ := tplAt(api, "DefinitionBody", "paths").(map[string]any)
			var defined []string
			for path, methods := range paths {
				ops, _ := methods.(map[string]any)
				for method, op := range ops {
					defined = append(defined, strings.ToUpper(method)+" "+path)
					tplSame(t, method+" "+path+" security", tplAt(op, "security"), keyRequired)
				}
			}
			routes := slices.Sorted(maps.Keys(tplEventRoutes(tpl)))
			slices.Sort(defined)
			if !slices.Equal(defined, routes) {
				t.Errorf("DefinitionBody routes %q, events %q: a route only in the events takes no API key, one only in the definition has no integration", defined, routes)
			}
		}},
		{"a custom domain closes execute-api and is the URL given out", func(t *testing.T) {
			tplSame(t, "Api.DisableExecuteApiEndpoint", tplAt(tpl, "Resources", "Api", "Properties", "DisableExecuteApiEndpoint"), cfnIf("UseDomain", true, false))
			routes := tplEventRoutes(tpl)
			for output, route := range map[string]string{
				"ExecuteQueryUrl": "POST /{instance}/RestServerIsapi.dll/api/v1/{class}/executequery",
				"ExecuteUrl":      "POST /{instance}/RestServerIsapi.dll/api/v1/{class}/execute",
			} {
				if routes[route] == "" {
					t.Errorf("%s: no event serves %s", output, route)
				}
				path := strings.Replace(strings.TrimPrefix(route, "POST "), "{class}", "${InterfaceClass}", 1)
				tplSame(t, "Outputs."+output, tplAt(tpl, "Outputs", output, "Value"), cfnIf("UseDomain",
					map[string]any{"Fn::Sub": "https://${DomainName}" + path},
					map[string]any{"Fn::Sub": "https://${Api}.execute-api.${AWS::Region}.${AWS::URLSuffix}/${StageName}" + path},
				))
			}
			tplSame(t, "CustomDomainMapping.Stage", tplAt(tpl, "Resources", "CustomDomainMapping", "Properties", "Stage"), cfnRef("Api.Stage"))
			if tplAt(tpl, "Resources", "CustomDomainMapping", "Properties", "BasePath") != nil {
				t.Errorf("CustomDomainMapping has a BasePath: the custom-domain URLs assume the stage at the root")
			}
		}},
	} {
		t.Run(tc.name, tc.check)
	}
}
