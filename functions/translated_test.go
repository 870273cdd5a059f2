package functions_test

import (
	"encoding/json"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// paramChanges is, for every parameter of template.yaml, one change
// CloudFormation accepts (with what the template's Rules require alongside),
// and whether it reaches the configuration a function's version holds.
var paramChanges = []struct {
	param     string
	set       map[string]string
	versioned bool
	only      string // versioned: this function's alone
}{
	{"SecretPrefix", map[string]string{"SecretPrefix": "erp/customers/"}, true, ""},
	{"AccessSecretId", map[string]string{"AccessSecretId": "erp/access-2"}, true, ""},
	{"MetricsNamespace", map[string]string{"MetricsNamespace": "Shared/ErpGateway"}, true, ""},
	{"InterfaceClass", map[string]string{"InterfaceClass": "TVendorRestInterface"}, true, ""},
	{"ErrorPrefix", map[string]string{"ErrorPrefix": "[FireDAC][Phys][FB]"}, true, ""},
	{"DatabaseTimeout", map[string]string{"DatabaseTimeout": "5s"}, true, ""},
	{"LogLevel", map[string]string{"LogLevel": "WARN"}, true, ""},
	{"SubnetIds", map[string]string{"SubnetIds": "subnet-0a,subnet-0b", "SecurityGroupIds": "sg-0a"}, true, ""},
	{"SecurityGroupIds", map[string]string{"SubnetIds": "subnet-0a", "SecurityGroupIds": "sg-0a,sg-0b"}, true, ""},
	{"ReservedConcurrency", map[string]string{"ReservedConcurrency": "0"}, false, ""},
	{"ThrottlingRateLimit", map[string]string{"ThrottlingRateLimit": "5"}, false, ""},
	{"ThrottlingBurstLimit", map[string]string{"ThrottlingBurstLimit": "7"}, false, ""},
	{"DomainName", map[string]string{"DomainName": "erp-api.example.com", "CertificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/1"}, false, ""},
	{"CertificateArn", map[string]string{"DomainName": "erp-api.example.com", "CertificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/2"}, false, ""},
	{"StageName", map[string]string{"StageName": "staging"}, false, ""},
	{"TlsPolicy", map[string]string{"DomainName": "erp-api.example.com", "CertificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/1", "TlsPolicy": "TLS_1_2"}, false, ""},
	{"WafRateLimit", map[string]string{"WafRateLimit": "10"}, false, ""},
	{"WafInstanceRateLimit", map[string]string{"WafInstanceRateLimit": "10"}, false, ""},
	{"WafTokenRateLimit", map[string]string{"WafTokenRateLimit": "10"}, false, ""},
	{"TokenKeyIds", map[string]string{"TokenKeyIds": "2026-11"}, false, ""},
	{"ReadOnlyDatabaseUser", map[string]string{"ReadOnlyDatabaseUser": "true"}, true, "ExecuteQueryFunction"},
	{"RequireApiKey", map[string]string{"RequireApiKey": "true"}, false, ""},
	{"ApiKeyRateLimit", map[string]string{"RequireApiKey": "true", "ApiKeyRateLimit": "3"}, false, ""},
	{"ApiKeyBurstLimit", map[string]string{"RequireApiKey": "true", "ApiKeyBurstLimit": "4"}, false, ""},
	{"ApiKeyQuotaPerDay", map[string]string{"RequireApiKey": "true", "ApiKeyQuotaPerDay": "1000"}, false, ""},
	{"LogRetentionDays", map[string]string{"LogRetentionDays": "7"}, false, ""},
	{"SetApiGatewayLogsRole", map[string]string{"SetApiGatewayLogsRole": "true"}, false, ""},
	{"AlarmTopicArn", map[string]string{"AlarmTopicArn": "arn:aws:sns:us-east-1:123456789012:alarms"}, false, ""},
	{"Api5xxAlarmPercent", map[string]string{"Api5xxAlarmPercent": "10"}, false, ""},
	{"LatencyAlarmMilliseconds", map[string]string{"LatencyAlarmMilliseconds": "5000"}, false, ""},
	{"UnavailableAlarmCount", map[string]string{"UnavailableAlarmCount": "3"}, false, ""},
	{"DeploymentType", map[string]string{"DeploymentType": "AllAtOnce"}, false, ""},
	{"RollbackAlarms", map[string]string{"RollbackAlarms": "functions"}, false, ""},
	{"PreTrafficInstance", map[string]string{"PreTrafficInstance": "demo"}, false, ""},
	{"PreTrafficToken", map[string]string{"PreTrafficToken": "erpgw_x"}, false, ""},
	{"MinimumCompressionSize", map[string]string{"MinimumCompressionSize": "-1"}, false, ""},
}

// translateAll is the default stack followed by one per paramChanges entry.
func translateAll(t *testing.T) []*cfnStack {
	t.Helper()
	sets := []map[string]string{{}}
	for _, c := range paramChanges {
		sets = append(sets, c.set)
	}
	return translate(t, sets...)
}

func TestTranslatedEveryParameterIsConsidered(t *testing.T) {
	stacks := translateAll(t)
	var listed []string
	for i, c := range paramChanges {
		listed = append(listed, c.param)
		if failing := stacks[i+1].rulesFailing(); len(failing) > 0 {
			t.Errorf("%s: the change %v breaks the template's rules %v", c.param, c.set, failing)
		}
	}
	slices.Sort(listed)
	if params := slices.Sorted(maps.Keys(stacks[0].params)); !slices.Equal(params, listed) {
		t.Errorf("template parameters %q, paramChanges %q: say what a new parameter reaches", params, listed)
	}
}

// functionVersions maps each function SAM versions to its version's logical
// id.
func functionVersions(t *testing.T, s *cfnStack) map[string]string {
	t.Helper()
	out := map[string]string{}
	for id, v := range s.ofType("AWS::Lambda::Version") {
		fn := strings.TrimSuffix(strings.TrimPrefix(tplAt(v, "Properties", "FunctionName").(string), "ref("), ")")
		if out[fn] != "" {
			t.Fatalf("%s has two versions", fn)
		}
		out[fn] = id
	}
	return out
}

// A function's configuration that a version does not hold: the rest is the
// version's snapshot.
var unversioned = []string{"ReservedConcurrentExecutions", "Tags"}

// TestTranslatedConfigurationChangesPublishAVersion changes every parameter:
// where a function's versioned configuration changes, CloudFormation must
// create a new AWS::Lambda::Version (a new logical id, or a property it
// cannot change in place), or the alias API Gateway calls keeps the old
// configuration; where it does not, the version must stay, or Lambda refuses
// to publish an unchanged function.
func TestTranslatedConfigurationChangesPublishAVersion(t *testing.T) {
	stacks := translateAll(t)
	replacing := createOnly(t, "AWS::Lambda::Version")["AWS::Lambda::Version"]
	identity := func(s *cfnStack, id string) string {
		b, _ := json.Marshal([]any{id, tplPick(tplAt(s.resources[id], "Properties"), replacing...)})
		return string(b)
	}
	config := func(s *cfnStack, fn string) any {
		props := maps.Clone(mapOf(tplAt(s.resources[fn], "Properties")))
		for _, k := range unversioned {
			delete(props, k)
		}
		return props
	}
	base := stacks[0]
	baseVersions := functionVersions(t, base)
	if fns := slices.Sorted(maps.Keys(baseVersions)); !slices.Equal(fns, []string{"ExecuteFunction", "ExecuteQueryFunction"}) {
		t.Fatalf("versioned functions %q", fns)
	}
	for i, c := range paramChanges {
		t.Run(c.param, func(t *testing.T) {
			s := stacks[i+1]
			for fn, version := range functionVersions(t, s) {
				changed := !reflect.DeepEqual(config(base, fn), config(s, fn))
				if want := c.versioned && (c.only == "" || c.only == fn); changed != want {
					t.Errorf("%s's versioned configuration changed: %v, want %v", fn, changed, want)
				}
				if published := identity(base, baseVersions[fn]) != identity(s, version); published != changed {
					t.Errorf("%s: configuration changed %v, new version %v\n%s\n%s", fn, changed, published, identity(base, baseVersions[fn]), identity(s, version))
				}
			}
		})
	}
}

// TestTranslatedVersionDescriptionFits holds the version's description,
// which lists the configuration, under Lambda's 256 characters for a wide
// but ordinary configuration: three subnets, two security groups.
func TestTranslatedVersionDescriptionFits(t *testing.T) {
	s := translate(t, map[string]string{
		"AWS::StackName":   "erp-gateway-production-eu",
		"SubnetIds":        "subnet-0123456789abcdef0,subnet-0123456789abcdef1,subnet-0123456789abcdef2",
		"SecurityGroupIds": "sg-0123456789abcdef0,sg-0123456789abcdef1",
		"ErrorPrefix":      "[FireDAC][Phys][FB]",
		"SecretPrefix":     "erp-gateway/production/instances/",
		"AccessSecretId":   "erp-gateway/production/access",
	})[0]
	for fn, version := range functionVersions(t, s) {
		d, _ := tplAt(s.resources[version], "Properties", "Description").(string)
		if len(d) > 256 || !strings.Contains(d, "subnet-0123456789abcdef2") {
			t.Errorf("%s's version description (%d characters) %q", fn, len(d), d)
		}
	}
}

// TestTranslatedStages: whatever the parameters, the API has one stage, the
// one StageName names, and everything that refers to a stage refers to it.
func TestTranslatedStages(t *testing.T) {
	for i, s := range translateAll(t) {
		stages, deployments := s.ofType("AWS::ApiGateway::Stage"), s.ofType("AWS::ApiGateway::Deployment")
		if len(stages) != 1 || stages["ApiStage"] == nil || len(deployments) != 1 {
			t.Fatalf("stack %d: stages %q, deployments %q", i, slices.Sorted(maps.Keys(stages)), slices.Sorted(maps.Keys(deployments)))
		}
		stage := tplAt(stages["ApiStage"], "Properties")
		tplSame(t, "StageName", tplAt(stage, "StageName"), s.params["StageName"])
		for id, d := range deployments {
			// A deployment's StageName creates a stage of its own.
			if name := tplAt(d, "Properties", "StageName"); name != nil {
				t.Errorf("stack %d: deployment %s creates the stage %v", i, id, name)
			}
			tplSame(t, "ApiStage.DeploymentId", tplAt(stage, "DeploymentId"), "ref("+id+")")
		}
		for id, p := range s.ofType("AWS::Lambda::Permission") {
			arn, _ := tplAt(p, "Properties", "SourceArn").(string)
			if !strings.Contains(arn, ":ref(Api)/") || tplAt(p, "Properties", "Principal") != "apigateway.amazonaws.com" {
				t.Errorf("stack %d: permission %s lets %v call from %s", i, id, tplAt(p, "Properties", "Principal"), arn)
			}
		}
		for what, v := range map[string]any{
			"CustomDomainMapping":  tplAt(s.resources, "CustomDomainMapping", "Properties", "Stage"),
			"UsagePlan":            tplAt(s.resources, "UsagePlan", "Properties", "ApiStages", 0, "Stage"),
			"WebAclAssociation":    tplAt(s.resources, "WebAclAssociation", "Properties", "ResourceArn"),
			"Api5xxAlarm":          tplAt(s.resources, "Api5xxAlarm", "Properties", "Metrics", 0, "MetricStat", "Metric", "Dimensions", 1, "Value"),
			"ApiLatencyAlarm":      tplAt(s.resources, "ApiLatencyAlarm", "Properties", "Dimensions", 1, "Value"),
			"the dashboard's body": tplAt(s.resources, "Dashboard", "Properties", "DashboardBody"),
		} {
			if v == nil {
				continue
			}
			if str := v.(string); str != "ref(ApiStage)" && str != s.params["StageName"] && !strings.HasSuffix(str, "/stages/ref(ApiStage)") &&
				!strings.Contains(str, `"Stage", "`+s.params["StageName"].(string)+`"`) {
				t.Errorf("stack %d: %s refers to the stage as %.200s", i, what, str)
			}
		}
	}
}

// TestTranslatedResources holds what CloudFormation creates, with the
// default parameters and with every option on: functions, versions, aliases,
// permissions, roles and alarms. A logical id ending in * is SAM's, named
// after a hash.
func TestTranslatedResources(t *testing.T) {
	stacks := translate(t, map[string]string{}, map[string]string{
		"SubnetIds": "subnet-0a", "SecurityGroupIds": "sg-0a", "DomainName": "erp-api.example.com", "CertificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/1",
		"WafRateLimit": "3000", "RequireApiKey": "true", "ApiKeyQuotaPerDay": "1000", "SetApiGatewayLogsRole": "true",
	})
	common := map[string][]string{
		"AWS::Lambda::Function":            {"ExecuteFunction", "ExecuteHookFunction", "ExecuteQueryFunction", "ExecuteQueryHookFunction"},
		"AWS::Lambda::Version":             {"ExecuteFunctionVersion*", "ExecuteQueryFunctionVersion*"},
		"AWS::Lambda::Alias":               {"ExecuteFunctionAliaslive", "ExecuteQueryFunctionAliaslive"},
		"AWS::Lambda::Permission":          {"ExecuteFunctionExecutePermissionStage", "ExecuteQueryFunctionExecuteQueryPermissionStage", "ExecuteQueryFunctionHealthPermissionStage"},
		"AWS::ApiGateway::Stage":           {"ApiStage"},
		"AWS::ApiGateway::Deployment":      {"ApiDeployment*"},
		"AWS::IAM::ManagedPolicy":          {"ReadSecretsPolicy", "SecretsPolicy"},
		"AWS::CodeDeploy::DeploymentGroup": {"ExecuteFunctionDeploymentGroup", "ExecuteQueryFunctionDeploymentGroup"},
		"AWS::CloudWatch::Alarm": {"Api5xxAlarm", "ApiLatencyAlarm", "ExecuteErrorsAlarm", "ExecuteQueryErrorsAlarm",
			"ExecuteQueryThrottlesAlarm", "ExecuteThrottlesAlarm", "OrphansAlarm", "UnavailableAlarm"},
		"AWS::WAFv2::WebACL":            {"WebAcl"},
		"AWS::WAFv2::WebACLAssociation": {"WebAclAssociation"},
	}
	roles := []string{"CodeDeployServiceRole", "ExecuteHookFunctionRole", "ExecuteQueryHookFunctionRole", "FunctionRole", "ReadRole"}
	for i, tc := range []struct {
		name  string
		extra map[string][]string
	}{
		{"defaults", map[string][]string{"AWS::IAM::Role": roles}},
		{"every option on", map[string][]string{
			"AWS::IAM::Role":                   append([]string{"ApiGatewayLogsRole"}, roles...),
			"AWS::ApiGateway::UsagePlan":       {"UsagePlan"},
			"AWS::ApiGateway::DomainName":      {"CustomDomain"},
			"AWS::ApiGateway::BasePathMapping": {"CustomDomainMapping"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := stacks[i]
			want := maps.Clone(common)
			maps.Copy(want, tc.extra)
			for typ, ids := range want {
				hashed := slices.ContainsFunc(ids, func(id string) bool { return strings.HasSuffix(id, "*") })
				var got []string
				for id := range s.ofType(typ) {
					if hashed {
						id = regexp.MustCompile(`[0-9a-f]{10}$`).ReplaceAllString(id, "*")
					}
					got = append(got, id)
				}
				slices.Sort(got)
				tplSame(t, typ, got, ids)
			}
			versions := functionVersions(t, s)
			for fn, version := range versions {
				alias := tplAt(s.resources[fn+"Aliaslive"], "Properties")
				tplSame(t, fn+" alias", tplPick(alias, "Name", "FunctionVersion"), map[string]any{"Name": "live", "FunctionVersion": "getatt(" + version + ".Version)"})
				tplSame(t, fn+" role", tplAt(s.resources[fn], "Properties", "Role"), "getatt("+map[string]string{"ExecuteFunction": "FunctionRole", "ExecuteQueryFunction": "ReadRole"}[fn]+".Arn)")
				// Kept when superseded or replaced, for a rollback by hand.
				tplSame(t, version+" policies", tplPick(s.resources[version], "DeletionPolicy", "UpdateReplacePolicy"),
					map[string]any{"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"})
			}
			for id, p := range s.ofType("AWS::Lambda::Permission") {
				fn := id[:strings.Index(id, "Function")+len("Function")]
				tplSame(t, id+" calls", tplAt(p, "Properties", "FunctionName"), "ref("+fn+"Aliaslive)")
			}
		})
	}
}

// tplPick is m with only the given keys.
func tplPick(m any, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		if v := tplAt(m, k); v != nil {
			out[k] = v
		}
	}
	return out
}
