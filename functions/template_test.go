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
	"github.com/erp-gateway/gateway/shared/erp"
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

	// A function's pre-traffic hook serves no route (TestTemplateOperations).
	hooks := tplHooks(cfnTemplate(t))
	served := map[catalog.Endpoint]bool{}
	for name, res := range tpl.Resources {
		if res.Type != "AWS::Serverless::Function" || hooks[name] != "" {
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
		code   erp.Code
	}
	want := map[string]answer{
		"DEFAULT_4XX":     {"", erp.CodeNotFound},
		"DEFAULT_5XX":     {"", erp.CodeUnavailable},
		"THROTTLED":       {"429", erp.CodeThrottled},
		"QUOTA_EXCEEDED":  {"429", erp.CodeThrottled},
		"API_KEY_INVALID": {"403", erp.CodeUnauthorized},
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
				Code    erp.Code `json:"cod_error"`
				Message string   `json:"ex_execsql"`
			}
			if err := json.Unmarshal([]byte(content), &answer); err != nil || answer.Code != erp.CodeThrottled || answer.Message == "" {
				t.Errorf("blocked body %q (%v), want cod_error %d and a message", content, err, erp.CodeThrottled)
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

// tplHooks maps each function that is another's pre-traffic hook to the
// function whose new versions it tries.
func tplHooks(tpl map[string]any) map[string]string {
	hooks := map[string]string{}
	resources, _ := tplAt(tpl, "Resources").(map[string]any)
	for name, res := range resources {
		if hook, ok := tplAt(res, "Properties", "DeploymentPreference", "Hooks", "PreTraffic", "Ref").(string); ok {
			hooks[hook] = name
		}
	}
	return hooks
}

// tplList is v as a list: IAM takes one action or resource alone or in a list.
func tplList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// TestTemplateOperations holds what runs the gateway in AWS to what the
// README's "Operating" section says: canary rollouts watched by the alarms
// and tried first by a hook that may invoke nothing but the new version, logs
// kept LogRetentionDays, an access log one request can be found in, alarms
// that notify the topic, and a dashboard of the metrics the handler writes.
func TestTemplateOperations(t *testing.T) {
	tpl := cfnTemplate(t)
	resources, _ := tplAt(tpl, "Resources").(map[string]any)
	api := tplAt(resources, "Api", "Properties")
	noValue := cfnRef("AWS::NoValue")
	functions := []struct{ name, hook, endpoint, alarmPrefix string }{
		{"ExecuteQueryFunction", "ExecuteQueryHookFunction", "executequery", "ExecuteQuery"},
		{"ExecuteFunction", "ExecuteHookFunction", "execute", "Execute"},
	}
	alarms := []string{"Api5xxAlarm", "ApiLatencyAlarm", "UnavailableAlarm",
		"ExecuteQueryErrorsAlarm", "ExecuteErrorsAlarm", "ExecuteQueryThrottlesAlarm", "ExecuteThrottlesAlarm"}
	apiDimensions := []any{
		map[string]any{"Name": "ApiName", "Value": cfnRef("AWS::StackName")},
		map[string]any{"Name": "Stage", "Value": cfnRef("StageName")},
	}
	// The group a resource's property refers to, if it is a log group kept
	// LogRetentionDays.
	retainedGroup := func(t *testing.T, what string, ref any) string {
		t.Helper()
		name, _ := tplAt(ref, "Ref").(string)
		if name == "" {
			name, _ = tplAt(ref, "Fn::GetAtt", 0).(string)
		}
		group := resources[name]
		if tplAt(group, "Type") != "AWS::Logs::LogGroup" {
			t.Errorf("%s is %#v, not a log group of the template", what, ref)
			return ""
		}
		tplSame(t, name+".RetentionInDays", tplAt(group, "Properties", "RetentionInDays"), cfnRef("LogRetentionDays"))
		// Kept, except when the stack's creation fails: a retry would find
		// the name taken.
		tplSame(t, name+".DeletionPolicy", tplAt(group, "DeletionPolicy"), "RetainExceptOnCreate")
		if tplAt(group, "Properties", "LogGroupName") == nil {
			t.Errorf("%s has no LogGroupName: an operator finds it by name", name)
		}
		return name
	}

	for _, tc := range []struct {
		name  string
		check func(t *testing.T)
	}{
		{"only the functions that reach Firebird are in the VPC; the hooks have time to report", func(t *testing.T) {
			if v := tplAt(tpl, "Globals", "Function", "VpcConfig"); v != nil {
				t.Errorf("Globals.Function.VpcConfig is %v: the hooks would join the VPC and get ENI permissions", v)
			}
			for _, f := range functions {
				if tplAt(resources, f.name, "Properties", "VpcConfig", "Fn::If", 0) != "UseVpc" {
					t.Errorf("%s.VpcConfig is not the UseVpc choice", f.name)
				}
				if v := tplAt(resources, f.hook, "Properties", "VpcConfig"); v != nil {
					t.Errorf("%s.VpcConfig is %v", f.hook, v)
				}
				// The hook keeps 5 s of its timeout to report; the rest
				// bounds its probes, each up to DatabaseTimeout.
				if to, _ := tplAt(resources, f.hook, "Properties", "Timeout").(int); to < 120 {
					t.Errorf("%s.Timeout is %d s: too short for a catalog's reads", f.hook, to)
				}
			}
		}},
		{"parameters", func(t *testing.T) {
			for _, p := range []struct {
				name string
				key  string
				want any
			}{
				{"LogRetentionDays", "Type", "Number"},
				{"LogRetentionDays", "Default", 30},
				{"LogRetentionDays", "AllowedValues", []any{1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653}},
				{"SetApiGatewayLogsRole", "Default", "false"},
				{"SetApiGatewayLogsRole", "AllowedValues", []any{"true", "false"}},
				{"AlarmTopicArn", "Default", ""},
				{"Api5xxAlarmPercent", "Type", "Number"},
				{"LatencyAlarmMilliseconds", "Type", "Number"},
				{"LatencyAlarmMilliseconds", "Default", 3000},
				{"UnavailableAlarmCount", "Type", "Number"},
				{"UnavailableAlarmCount", "Default", 10},
				{"DeploymentType", "Default", "Canary10Percent5Minutes"},
				// Every type SAM turns into a CodeDeploy predefined configuration.
				{"DeploymentType", "AllowedValues", []any{"Canary10Percent5Minutes", "Canary10Percent10Minutes", "Canary10Percent15Minutes", "Canary10Percent30Minutes",
					"Linear10PercentEvery1Minute", "Linear10PercentEvery2Minutes", "Linear10PercentEvery3Minutes", "Linear10PercentEvery10Minutes", "AllAtOnce"}},
				{"PreTrafficInstance", "Default", ""},
				{"RollbackAlarms", "Default", "all"},
				{"RollbackAlarms", "AllowedValues", []any{"all", "functions"}},
				{"MinimumCompressionSize", "Type", "Number"},
				{"MinimumCompressionSize", "Default", 1024},
				{"MinimumCompressionSize", "MinValue", -1},
				{"MinimumCompressionSize", "MaxValue", 10485760},
			} {
				tplSame(t, "Parameters."+p.name+"."+p.key, tplAt(tpl, "Parameters", p.name, p.key), p.want)
				if d, _ := tplAt(tpl, "Parameters", p.name, "Description").(string); d == "" {
					t.Errorf("Parameters.%s has no Description", p.name)
				}
			}
			pattern, _ := tplAt(tpl, "Parameters", "PreTrafficInstance", "AllowedPattern").(string)
			re, err := regexp.Compile(pattern)
			if err != nil {
				t.Fatalf("PreTrafficInstance.AllowedPattern %q: %v", pattern, err)
			}
			for value, ok := range map[string]bool{"": true, "demo": true, "Cliente_01-b": true, strings.Repeat("a", 64): true,
				strings.Repeat("a", 65): false, "a b": false, "../demo": false, "demo/x": false} {
				if re.MatchString(value) != ok {
					t.Errorf("PreTrafficInstance.AllowedPattern %q takes %q: %v, want %v", pattern, value, !ok, ok)
				}
			}
		}},
		{"conditions follow the parameters", func(t *testing.T) {
			for name, want := range map[string]any{
				"SetLogsRole":    map[string]any{"Fn::Equals": []any{cfnRef("SetApiGatewayLogsRole"), "true"}},
				"UseAlarmTopic":  map[string]any{"Fn::Not": []any{map[string]any{"Fn::Equals": []any{cfnRef("AlarmTopicArn"), ""}}}},
				"UseCompression": map[string]any{"Fn::Not": []any{map[string]any{"Fn::Equals": []any{cfnRef("MinimumCompressionSize"), "-1"}}}},
			} {
				tplSame(t, "Conditions."+name, tplAt(tpl, "Conditions", name), want)
			}
		}},
		{"each function rolls out through its alias, watched by the alarms and tried first by its hook", func(t *testing.T) {
			for _, key := range []string{"AutoPublishAlias", "DeploymentPreference"} {
				if tplAt(tpl, "Globals", "Function", key) != nil {
					t.Errorf("Globals.Function.%s is set: the hooks would be deployed through CodeDeploy too", key)
				}
			}
			for _, fn := range functions {
				props := tplAt(resources, fn.name, "Properties")
				tplSame(t, fn.name+".AutoPublishAlias", tplAt(props, "AutoPublishAlias"), "live")
				pref := tplAt(props, "DeploymentPreference")
				tplSame(t, fn.name+".DeploymentPreference.Type", tplAt(pref, "Type"), cfnRef("DeploymentType"))
				tplSame(t, fn.name+".DeploymentPreference.Hooks", tplAt(pref, "Hooks"), map[string]any{"PreTraffic": cfnRef(fn.hook)})
				if enabled := tplAt(pref, "Enabled"); enabled != nil && enabled != true {
					t.Errorf("%s.DeploymentPreference.Enabled is %#v", fn.name, enabled)
				}
				// RollbackAlarms chooses between the list and the
				// function's own alarms.
				tplSame(t, fn.name+" rollback choice", tplAt(pref, "Alarms", "Fn::If", 0), "RollbackOnAll")
				for i, want := range [][]string{
					{"Api5xxAlarm", "ApiLatencyAlarm", "UnavailableAlarm", fn.alarmPrefix + "ErrorsAlarm", fn.alarmPrefix + "ThrottlesAlarm"},
					{fn.alarmPrefix + "ErrorsAlarm", fn.alarmPrefix + "ThrottlesAlarm"},
				} {
					watched, _ := tplAt(pref, "Alarms", "Fn::If", i+1).([]any)
					// CodeDeploy watches at most 10 alarms per deployment group.
					if len(watched) > 10 {
						t.Errorf("%s watches %d alarms", fn.name, len(watched))
					}
					for _, alarm := range want {
						if !slices.ContainsFunc(watched, func(a any) bool { return reflect.DeepEqual(a, cfnRef(alarm)) }) {
							t.Errorf("%s's deployment does not roll back on %s: alarms %#v", fn.name, alarm, watched)
						}
					}
					for _, w := range watched {
						if name, _ := tplAt(w, "Ref").(string); tplAt(resources, name, "Type") != "AWS::CloudWatch::Alarm" {
							t.Errorf("%s's deployment watches %#v, not an alarm of the template", fn.name, w)
						}
					}
				}
				// The alias's traffic, the canary's included.
				for _, metric := range []string{"Errors", "Throttles"} {
					alarm := tplAt(resources, fn.alarmPrefix+metric+"Alarm", "Properties")
					tplSame(t, fn.alarmPrefix+metric+"Alarm metric", []any{tplAt(alarm, "Namespace"), tplAt(alarm, "MetricName")}, []any{"AWS/Lambda", metric})
					tplSame(t, fn.alarmPrefix+metric+"Alarm.Dimensions", tplAt(alarm, "Dimensions"), []any{
						map[string]any{"Name": "FunctionName", "Value": cfnRef(fn.name)},
						map[string]any{"Name": "Resource", "Value": map[string]any{"Fn::Sub": "${" + fn.name + "}:live"}},
					})
				}
			}
		}},
		{"a hook may invoke only the version it tries", func(t *testing.T) {
			want := map[string]string{}
			for _, fn := range functions {
				want[fn.hook] = fn.name
			}
			tplSame(t, "pre-traffic hooks", tplHooks(tpl), want)
			makefile, err := os.ReadFile("../Makefile")
			if err != nil {
				t.Fatal(err)
			}
			for _, fn := range functions {
				hook := resources[fn.hook]
				props := tplAt(hook, "Properties")
				tplSame(t, fn.hook+".Type", tplAt(hook, "Type"), "AWS::Serverless::Function")
				tplSame(t, fn.hook+".BuildMethod", tplAt(hook, "Metadata", "BuildMethod"), "makefile")
				// sam build runs build-<hook>, which may share its rule.
				target := regexp.MustCompile(`(?m)^(?:[\w-]+ )*build-` + fn.hook + `(?: [\w-]+)*:.*\n\t.*-o \$\(ARTIFACTS_DIR\)/bootstrap \./functions/(\w+)$`).FindSubmatch(makefile)
				if target == nil {
					t.Errorf("%s: no Makefile target build-%s building ./functions/<command>", fn.hook, fn.hook)
				} else if e := catalog.Endpoint(target[1]); e == catalog.ExecuteQuery || e == catalog.Execute {
					t.Errorf("%s builds the %s function, not a hook", fn.hook, e)
				}
				// The role SAM makes for CodeDeploy invokes only CodeDeployHook_*.
				name, _ := tplAt(props, "FunctionName", "Fn::Sub").(string)
				if !strings.HasPrefix(name, "CodeDeployHook_") {
					t.Errorf("%s.FunctionName is %#v: CodeDeploy may not invoke it", fn.hook, tplAt(props, "FunctionName"))
				}
				for _, key := range []string{"Events", "AutoPublishAlias", "DeploymentPreference", "Role"} {
					if tplAt(props, key) != nil {
						t.Errorf("%s.%s is set", fn.hook, key)
					}
				}
				vars := tplAt(props, "Environment", "Variables")
				tplSame(t, fn.hook+" GATEWAY_HOOK_ENDPOINT", tplAt(vars, "GATEWAY_HOOK_ENDPOINT"), fn.endpoint)
				tplSame(t, fn.hook+" GATEWAY_HOOK_TARGET", tplAt(vars, "GATEWAY_HOOK_TARGET"), cfnRef(fn.name+".Version"))
				tplSame(t, fn.hook+" GATEWAY_HOOK_INSTANCE", tplAt(vars, "GATEWAY_HOOK_INSTANCE"), cfnRef("PreTrafficInstance"))

				policies, _ := tplAt(props, "Policies").([]any)
				if len(policies) == 0 {
					t.Errorf("%s has no policies", fn.hook)
				}
				granted := map[string][]any{}
				for _, policy := range policies {
					statements, ok := tplAt(policy, "Statement").([]any)
					if !ok {
						// A managed policy or a SAM policy template grants what
						// this test cannot see.
						t.Errorf("%s has policy %#v, not a policy document", fn.hook, policy)
						continue
					}
					for _, st := range statements {
						tplSame(t, fn.hook+" statement effect", tplAt(st, "Effect"), "Allow")
						if tplAt(st, "NotAction") != nil || tplAt(st, "NotResource") != nil {
							t.Errorf("%s: statement %#v grants by exclusion", fn.hook, st)
						}
						for _, action := range tplList(tplAt(st, "Action")) {
							a, _ := action.(string)
							if strings.Contains(a, "*") {
								t.Errorf("%s: action %q is a wildcard", fn.hook, a)
							}
							granted[a] = append(granted[a], tplList(tplAt(st, "Resource"))...)
						}
					}
				}
				for action := range granted {
					if strings.HasPrefix(strings.ToLower(action), "lambda:") && action != "lambda:InvokeFunction" {
						t.Errorf("%s may %s", fn.hook, action)
					}
				}
				tplSame(t, fn.hook+" may invoke", granted["lambda:InvokeFunction"], []any{cfnRef(fn.name + ".Version")})
				tplSame(t, fn.hook+" may report to", granted["codedeploy:PutLifecycleEventHookExecutionStatus"], []any{
					map[string]any{"Fn::Sub": "arn:${AWS::Partition}:codedeploy:${AWS::Region}:${AWS::AccountId}:deploymentgroup:${ServerlessDeploymentApplication}/*"},
				})
				tplSame(t, fn.hook+" may read", granted["secretsmanager:GetSecretValue"], []any{
					map[string]any{"Fn::Sub": "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:${AccessSecretId}-??????"},
				})
				if len(granted) != 3 {
					t.Errorf("%s may %v", fn.hook, slices.Sorted(maps.Keys(granted)))
				}
			}
		}},
		{"every function logs to a group of its own, kept LogRetentionDays", func(t *testing.T) {
			tplSame(t, "Globals.Function.LoggingConfig", tplAt(tpl, "Globals", "Function", "LoggingConfig"), map[string]any{
				"LogFormat": "JSON", "ApplicationLogLevel": cfnRef("LogLevel"), "SystemLogLevel": "WARN",
			})
			groups := map[string]string{}
			for name, res := range resources {
				if tplAt(res, "Type") != "AWS::Serverless::Function" {
					continue
				}
				// SAM merges this into the global LoggingConfig key by key:
				// another key here would override the global one.
				local, _ := tplAt(res, "Properties", "LoggingConfig").(map[string]any)
				if keys := slices.Sorted(maps.Keys(local)); !slices.Equal(keys, []string{"LogGroup"}) {
					t.Errorf("%s.LoggingConfig sets %q, want LogGroup alone", name, keys)
				}
				group := retainedGroup(t, name+".LoggingConfig.LogGroup", local["LogGroup"])
				if other, ok := groups[group]; ok && group != "" {
					t.Errorf("%s and %s log to the same group %s", name, other, group)
				}
				groups[group] = name
			}
			if len(groups) != 4 {
				t.Errorf("functions log to %v, want the two endpoints and their hooks", groups)
			}
		}},
		{"the stage's access log: one JSON object a line, with what finds a request", func(t *testing.T) {
			arn := map[string]any{"Fn::GetAtt": []any{"ApiAccessLogGroup", "Arn"}}
			// The Select orders the stage after the account's logging role.
			tplSame(t, "Api.AccessLogSetting.DestinationArn", tplAt(api, "AccessLogSetting", "DestinationArn"), cfnIf("SetLogsRole",
				map[string]any{"Fn::Select": []any{0, []any{arn, cfnRef("ApiGatewayAccount")}}}, arn))
			retainedGroup(t, "the access log", arn)

			format, _ := tplAt(api, "AccessLogSetting", "Format").(string)
			if strings.ContainsAny(format, "\r\n") {
				t.Errorf("access log format spans lines: %q", format)
			}
			// An unquoted variable (a number) read as a string.
			quoted := regexp.MustCompile(`:\s*(\$context\.[A-Za-z.]+)`).ReplaceAllString(format, `:"$1"`)
			var fields map[string]string
			if err := json.Unmarshal([]byte(quoted), &fields); err != nil {
				t.Fatalf("access log format is not a JSON object of strings: %v\n%s", err, format)
			}
			for name, value := range fields {
				if !regexp.MustCompile(`^\$context\.[A-Za-z.]+$`).MatchString(value) {
					t.Errorf("access log field %s is %q, not one $context variable", name, value)
				}
			}
			for name, want := range map[string]string{
				// X-Request-Id is API Gateway's requestId (shared/gateway).
				"requestId":          "$context.requestId",
				"sourceIp":           "$context.identity.sourceIp",
				"httpMethod":         "$context.httpMethod",
				"resourcePath":       "$context.resourcePath",
				"path":               "$context.path",
				"instance":           "", // no $context variable holds a path parameter
				"status":             "$context.status",
				"responseLatency":    "$context.responseLatency",
				"integrationLatency": "$context.integrationLatency",
				"responseLength":     "$context.responseLength",
			} {
				got, ok := fields[name]
				if !ok {
					t.Errorf("access log has no field %s", name)
				} else if want != "" && got != want {
					t.Errorf("access log field %s is %q, want %q", name, got, want)
				}
			}
		}},
		{"the account's logging role only on request, and kept", func(t *testing.T) {
			role := resources["ApiGatewayLogsRole"]
			tplSame(t, "ApiGatewayLogsRole.Type", tplAt(role, "Type"), "AWS::IAM::Role")
			tplSame(t, "ApiGatewayLogsRole.Condition", tplAt(role, "Condition"), "SetLogsRole")
			// The account setting outlives the stack and points at the role.
			tplSame(t, "ApiGatewayLogsRole.DeletionPolicy", tplAt(role, "DeletionPolicy"), "Retain")
			tplSame(t, "ApiGatewayLogsRole trusted", tplAt(role, "Properties", "AssumeRolePolicyDocument", "Statement", 0, "Principal"),
				map[string]any{"Service": "apigateway.amazonaws.com"})
			tplSame(t, "ApiGatewayLogsRole policies", tplAt(role, "Properties", "ManagedPolicyArns"),
				[]any{map[string]any{"Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs"}})
			account := resources["ApiGatewayAccount"]
			tplSame(t, "ApiGatewayAccount.Type", tplAt(account, "Type"), "AWS::ApiGateway::Account")
			tplSame(t, "ApiGatewayAccount.Condition", tplAt(account, "Condition"), "SetLogsRole")
			tplSame(t, "ApiGatewayAccount.CloudWatchRoleArn", tplAt(account, "Properties", "CloudWatchRoleArn"),
				map[string]any{"Fn::GetAtt": []any{"ApiGatewayLogsRole", "Arn"}})
		}},
		{"every alarm notifies the topic, when one is given", func(t *testing.T) {
			topic := cfnIf("UseAlarmTopic", []any{cfnRef("AlarmTopicArn")}, noValue)
			var found []string
			for name, res := range resources {
				if tplAt(res, "Type") != "AWS::CloudWatch::Alarm" {
					continue
				}
				found = append(found, name)
				props := tplAt(res, "Properties")
				tplSame(t, name+".AlarmActions", tplAt(props, "AlarmActions"), topic)
				tplSame(t, name+".OKActions", tplAt(props, "OKActions"), topic)
				tplSame(t, name+".TreatMissingData", tplAt(props, "TreatMissingData"), "notBreaching")
				if d, _ := tplAt(props, "AlarmDescription").(string); d == "" {
					t.Errorf("%s has no AlarmDescription: the notification says nothing", name)
				}
			}
			slices.Sort(found)
			tplSame(t, "alarms", found, slices.Sorted(slices.Values(alarms)))
		}},
		{"the API's alarms watch this stage, found by the API's name", func(t *testing.T) {
			// Alarms cannot refer to the API (see Api.Name): the name they use
			// must be the one the API gets.
			tplSame(t, "Api.Name", tplAt(api, "Name"), cfnRef("AWS::StackName"))
			tplSame(t, "Api title", tplAt(api, "DefinitionBody", "info", "title"), cfnRef("AWS::StackName"))

			errors := tplAt(resources, "Api5xxAlarm", "Properties")
			metrics, _ := tplAt(errors, "Metrics").([]any)
			stats := map[string]any{}
			var expression string
			for _, m := range metrics {
				if tplAt(m, "ReturnData") == true {
					expression, _ = tplAt(m, "Expression").(string)
					continue
				}
				id, _ := tplAt(m, "Id").(string)
				tplSame(t, "Api5xxAlarm "+id+" dimensions", tplAt(m, "MetricStat", "Metric", "Dimensions"), apiDimensions)
				stats[id] = []any{tplAt(m, "MetricStat", "Metric", "Namespace"), tplAt(m, "MetricStat", "Metric", "MetricName"), tplAt(m, "MetricStat", "Stat"), tplAt(m, "MetricStat", "Period")}
			}
			tplSame(t, "Api5xxAlarm metrics", stats, map[string]any{
				"errors":   []any{"AWS/ApiGateway", "5XXError", "Sum", 300},
				"requests": []any{"AWS/ApiGateway", "Count", "Sum", 300},
			})
			// A handful of requests cannot set it off.
			tplSame(t, "Api5xxAlarm expression", expression, "IF(requests >= 20, 100 * errors / requests, 0)")
			tplSame(t, "Api5xxAlarm.Threshold", tplAt(errors, "Threshold"), cfnRef("Api5xxAlarmPercent"))

			latency := tplAt(resources, "ApiLatencyAlarm", "Properties")
			tplSame(t, "ApiLatencyAlarm.Dimensions", tplAt(latency, "Dimensions"), apiDimensions)
			for key, want := range map[string]any{"Namespace": "AWS/ApiGateway", "MetricName": "Latency", "ExtendedStatistic": "p99",
				"Period": 300, "EvaluationPeriods": 2, "DatapointsToAlarm": 2, "Threshold": cfnRef("LatencyAlarmMilliseconds")} {
				tplSame(t, "ApiLatencyAlarm."+key, tplAt(latency, key), want)
			}
		}},
		{"the unavailable alarm: each operation a contributor of its own", func(t *testing.T) {
			props := tplAt(resources, "UnavailableAlarm", "Properties")
			metrics, _ := tplAt(props, "Metrics").([]any)
			if len(metrics) != 1 {
				t.Fatalf("UnavailableAlarm.Metrics %#v, want the one query", metrics)
			}
			query, _ := tplAt(metrics[0], "Expression", "Fn::Sub").(string)
			for _, part := range []string{
				`SELECT SUM(Requests) FROM SCHEMA("${MetricsNamespace}", Operation, Outcome)`,
				"WHERE Outcome = '" + string(erp.OutcomeUnavailable) + "'",
				// Both make it a multi-time-series alarm.
				"GROUP BY Operation", "ORDER BY",
			} {
				if !strings.Contains(query, part) {
					t.Errorf("UnavailableAlarm query %q lacks %q", query, part)
				}
			}
			tplSame(t, "UnavailableAlarm period", tplAt(metrics[0], "Period"), 300)
			tplSame(t, "UnavailableAlarm ReturnData", tplAt(metrics[0], "ReturnData"), true)
			tplSame(t, "UnavailableAlarm.Threshold", tplAt(props, "Threshold"), cfnRef("UnavailableAlarmCount"))
			tplSame(t, "UnavailableAlarm.ComparisonOperator", tplAt(props, "ComparisonOperator"), "GreaterThanOrEqualToThreshold")
		}},
		{"the dashboard shows the handler's metrics and the alarms", func(t *testing.T) {
			dashboard := resources["Dashboard"]
			tplSame(t, "Dashboard.Type", tplAt(dashboard, "Type"), "AWS::CloudWatch::Dashboard")
			tplSame(t, "DashboardName", tplAt(dashboard, "Properties", "DashboardName"), map[string]any{"Fn::Sub": "${AWS::StackName}"})
			body, _ := tplAt(dashboard, "Properties", "DashboardBody", "Fn::Sub").(string)
			// Everything substituted must exist, or the deploy fails.
			for _, m := range regexp.MustCompile(`\$\{([^}!]+)\}`).FindAllStringSubmatch(body, -1) {
				name, _, _ := strings.Cut(m[1], ".")
				if tplAt(tpl, "Parameters", name) == nil && resources[name] == nil && !strings.HasPrefix(name, "AWS::") {
					t.Errorf("dashboard substitutes ${%s}, which the template does not define", m[1])
				}
			}
			// Every ${...} a placeholder that is valid in a string and as a number.
			var parsed struct {
				Widgets []struct {
					Type       string         `json:"type"`
					Properties map[string]any `json:"properties"`
				} `json:"widgets"`
			}
			if err := json.Unmarshal([]byte(regexp.MustCompile(`\$\{[^}]*\}`).ReplaceAllString(body, "0")), &parsed); err != nil {
				t.Fatalf("dashboard body is not JSON: %v", err)
			}
			if len(parsed.Widgets) == 0 {
				t.Fatalf("dashboard has no widgets")
			}
			for _, metric := range []string{"Requests", "Latency", "DatabaseTime", "BreakerTrips", "SecretFetches", "ConnectionOpens", "StatementPrepares"} {
				if !strings.Contains(body, `{\"${MetricsNamespace}\",Operation,Outcome} MetricName=\"`+metric+`\"`) {
					t.Errorf("dashboard does not search %s by Operation and Outcome", metric)
				}
			}
			for _, outcome := range []erp.Outcome{erp.OutcomeOK, erp.OutcomeRefusedByDB} {
				if !strings.Contains(body, `Outcome=\"`+string(outcome)+`\"`) {
					t.Errorf("dashboard latency panels miss outcome %s", outcome)
				}
			}
			for _, alarm := range alarms {
				if !strings.Contains(body, "${"+alarm+".Arn}") {
					t.Errorf("dashboard does not show %s", alarm)
				}
			}
		}},
		{"compression follows MinimumCompressionSize", func(t *testing.T) {
			tplSame(t, "Api.MinimumCompressionSize", tplAt(api, "MinimumCompressionSize"), cfnIf("UseCompression", cfnRef("MinimumCompressionSize"), noValue))
		}},
	} {
		t.Run(tc.name, tc.check)
	}
}
