package functions_test

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/erp-gateway/gateway/shared/access"
	"github.com/erp-gateway/gateway/shared/erp"
)

// grants maps each action a role may take to the resources it may take it
// on, from its inline policies and the template's managed policies attached
// to it by their Roles; managed policies of AWS are listed apart by ARN.
func grants(t *testing.T, s *cfnStack, role string) (actions map[string][]string, awsManaged []string) {
	t.Helper()
	actions = map[string][]string{}
	var documents []any
	props := tplAt(s.resources[role], "Properties")
	for _, p := range tplList(tplAt(props, "Policies")) {
		documents = append(documents, tplAt(p, "PolicyDocument"))
	}
	for _, p := range s.ofType("AWS::IAM::ManagedPolicy") {
		if slices.Contains(tplList(tplAt(p, "Properties", "Roles")), any("ref("+role+")")) {
			documents = append(documents, tplAt(p, "Properties", "PolicyDocument"))
		}
	}
	for _, doc := range documents {
		for _, st := range tplList(tplAt(doc, "Statement")) {
			if tplAt(st, "Effect") != "Allow" || tplAt(st, "NotAction") != nil || tplAt(st, "NotResource") != nil {
				t.Errorf("%s: statement %v", role, st)
			}
			for _, a := range tplList(tplAt(st, "Action")) {
				for _, r := range tplList(tplAt(st, "Resource")) {
					actions[a.(string)] = append(actions[a.(string)], fmt.Sprint(r))
				}
			}
		}
	}
	for _, arn := range tplList(tplAt(props, "ManagedPolicyArns")) {
		awsManaged = append(awsManaged, strings.TrimPrefix(fmt.Sprint(arn), "arn:aws:iam::aws:policy/"))
	}
	slices.Sort(awsManaged)
	return actions, awsManaged
}

const (
	secretARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:"
	basicLogs = "service-role/AWSLambdaBasicExecutionRole"
	xray      = "AWSXrayWriteOnlyAccess"
	vpcAccess = "service-role/AWSLambdaVPCAccessExecutionRole"
)

// TestTranslatedFunctionsRole: the two functions, each with a role of its
// own, may read their secrets and nothing else of the account, and get the
// VPC's network-interface permissions only in a VPC. With
// ReadOnlyDatabaseUser, the reads' role reads each instance's second secret
// alone ("/reader"), never the writes' credentials.
func TestTranslatedFunctionsRole(t *testing.T) {
	stacks := translate(t, map[string]string{}, map[string]string{"SubnetIds": "subnet-0a", "SecurityGroupIds": "sg-0a"}, map[string]string{"ReadOnlyDatabaseUser": "true"})
	instances := map[string][]string{
		"secretsmanager:GetSecretValue": {secretARN + "erp-gateway/instances/*", secretARN + "erp-gateway/access-??????"},
		"secretsmanager:DescribeSecret": {secretARN + "erp-gateway/instances/*"},
	}
	readers := map[string][]string{
		"secretsmanager:GetSecretValue": {secretARN + "erp-gateway/instances/*/reader-??????", secretARN + "erp-gateway/access-??????"},
		"secretsmanager:DescribeSecret": {secretARN + "erp-gateway/instances/*/reader-??????"},
	}
	for i, want := range [][]string{{xray, basicLogs}, {xray, basicLogs, vpcAccess}, {xray, basicLogs}} {
		for role, own := range map[string]map[string][]string{"FunctionRole": instances, "ReadRole": map[bool]map[string][]string{true: readers, false: instances}[i == 2]} {
			actions, managed := grants(t, stacks[i], role)
			tplSame(t, role+"'s AWS policies", managed, want)
			tplSame(t, role+"'s own grants", actions, own)
		}
		env := tplAt(stacks[i].resources, "ExecuteQueryFunction", "Properties", "Environment", "Variables", "GATEWAY_SECRET_SUFFIX")
		if want := map[bool]string{true: "/reader", false: ""}[i == 2]; env != want {
			t.Errorf("stack %d: the reads' GATEWAY_SECRET_SUFFIX is %v, want %q", i, env, want)
		}
	}
}

// TestTranslatedSecretsGrantOutlivesTheOldVersion: a new SecretPrefix or
// AccessSecretId reaches the role as a new policy, created beside the old one
// (whose description CloudFormation cannot change in place), so that during
// a canary the old version still reads the old secrets; the functions, and
// so their new versions, are updated only once it exists.
func TestTranslatedSecretsGrantOutlivesTheOldVersion(t *testing.T) {
	stacks := translate(t, map[string]string{}, map[string]string{"SecretPrefix": "erp/customers/"}, map[string]string{"AccessSecretId": "erp/access-2"},
		map[string]string{"ReadOnlyDatabaseUser": "true"})
	replacing := createOnly(t, "AWS::IAM::ManagedPolicy")["AWS::IAM::ManagedPolicy"]
	if tplAt(stacks[0].resources, "FunctionRole", "Properties", "Policies") != nil {
		t.Fatalf("FunctionRole has inline policies: a change to them applies at once, before the canary")
	}
	for fn, policy := range map[string]string{"ExecuteQueryFunction": "ReadSecretsPolicy", "ExecuteFunction": "SecretsPolicy"} {
		if !slices.Contains(tplList(tplAt(stacks[0].resources, fn, "DependsOn")), any(policy)) {
			t.Errorf("%s does not depend on %s", fn, policy)
		}
	}
	for role, policy := range map[string]string{"FunctionRole": "SecretsPolicy", "ReadRole": "ReadSecretsPolicy"} {
		base := tplPick(tplAt(stacks[0].resources, policy, "Properties"), replacing...)
		for i, read := range []string{"erp/customers/*", "erp/access-2-??????", "erp-gateway/instances/*/reader-??????"} {
			if policy == "SecretsPolicy" && i == 2 {
				continue // the writes' secrets stay
			}
			s := stacks[i+1]
			actions, _ := grants(t, s, role)
			if !slices.Contains(actions["secretsmanager:GetSecretValue"], secretARN+read) {
				t.Errorf("%s may read %q, not %s", role, actions["secretsmanager:GetSecretValue"], read)
			}
			if got := tplPick(tplAt(s.resources, policy, "Properties"), replacing...); fmt.Sprint(got) == fmt.Sprint(base) {
				t.Errorf("a new grant of %s changes %s in place (%v): the live version loses its secrets", read, policy, got)
			}
		}
	}
}

// TestTranslatedHookRoles: a hook may report to CodeDeploy and invoke the
// version it checks, nothing else: no secret, so no key (it is given a
// token, PreTrafficToken).
func TestTranslatedHookRoles(t *testing.T) {
	s := translate(t, map[string]string{})[0]
	versions := functionVersions(t, s)
	for hook, fn := range map[string]string{"ExecuteQueryHookFunction": "ExecuteQueryFunction", "ExecuteHookFunction": "ExecuteFunction"} {
		actions, managed := grants(t, s, hook+"Role")
		tplSame(t, hook+"'s AWS policies", managed, []string{xray, basicLogs})
		tplSame(t, hook+"'s grants", actions, map[string][]string{
			"lambda:InvokeFunction":                           {"ref(" + versions[fn] + ")"},
			"codedeploy:PutLifecycleEventHookExecutionStatus": {"arn:aws:codedeploy:us-east-1:123456789012:deploymentgroup:ref(ServerlessDeploymentApplication)/*"},
		})
		tplSame(t, hook+" target", tplAt(s.resources, hook, "Properties", "Environment", "Variables", "GATEWAY_HOOK_TARGET"), "ref("+versions[fn]+")")
	}
}

// TestTranslatedHookNamesFitAnyStackName: CodeDeploy's role may invoke only
// functions named CodeDeployHook_*, Lambda allows 64 characters, and a stack
// name may have 128.
func TestTranslatedHookNamesFitAnyStackName(t *testing.T) {
	s := translate(t, map[string]string{"AWS::StackName": "s" + strings.Repeat("-long", 25) + "-ok"})[0]
	for _, hook := range []string{"ExecuteQueryHookFunction", "ExecuteHookFunction"} {
		name, _ := tplAt(s.resources, hook, "Properties", "FunctionName").(string)
		if !strings.HasPrefix(name, "CodeDeployHook_") || len(name) > 64 || !strings.Contains(name, testStackUUID) {
			t.Errorf("%s is named %q (%d characters)", hook, name, len(name))
		}
	}
}

// TestTranslatedMetricsPerStack: a stack's functions write their metrics in
// a namespace of its own, where its alarm and dashboard read them, so that
// another stack's outage (staging's) cannot roll this one (production's)
// back; MetricsNamespace, when given, is used everywhere.
func TestTranslatedMetricsPerStack(t *testing.T) {
	stacks := translate(t, map[string]string{"AWS::StackName": "erp-prod"}, map[string]string{"AWS::StackName": "erp-staging"},
		map[string]string{"AWS::StackName": "erp-prod", "MetricsNamespace": "Shared/Erp"})
	for i, want := range []string{"ErpGateway/erp-prod", "ErpGateway/erp-staging", "Shared/Erp"} {
		s := stacks[i]
		for _, fn := range []string{"ExecuteQueryFunction", "ExecuteFunction"} {
			tplSame(t, fn+" namespace", tplAt(s.resources, fn, "Properties", "Environment", "Variables", "GATEWAY_METRICS_NAMESPACE"), want)
		}
		query, _ := tplAt(s.resources, "UnavailableAlarm", "Properties", "Metrics", 0, "Expression").(string)
		if !strings.Contains(query, `SCHEMA("`+want+`", Operation, Outcome)`) {
			t.Errorf("UnavailableAlarm reads %s", query)
		}
		body, _ := tplAt(s.resources, "Dashboard", "Properties", "DashboardBody").(string)
		if n := strings.Count(body, "SEARCH("); n == 0 || strings.Count(body, `SEARCH('{\"`+want+`\",`) != n {
			t.Errorf("the dashboard's %d searches are not all in %s", n, want)
		}
	}
}

// TestTranslatedRules: the combinations that would fail halfway through a
// deploy, or deploy something else, are refused before anything changes.
func TestTranslatedRules(t *testing.T) {
	cases := []struct {
		set  map[string]string
		want []string
	}{
		{map[string]string{}, nil},
		{map[string]string{"SubnetIds": "subnet-0a"}, []string{"VpcNeedsSubnetsAndSecurityGroups"}},
		{map[string]string{"SecurityGroupIds": "sg-0a"}, []string{"VpcNeedsSubnetsAndSecurityGroups"}},
		{map[string]string{"SubnetIds": "subnet-0a,subnet-0b", "SecurityGroupIds": "sg-0a"}, nil},
		{map[string]string{"DomainName": "erp-api.example.com"}, []string{"DomainNeedsCertificate"}},
		{map[string]string{"DomainName": "erp-api.example.com", "CertificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/1"}, nil},
		{map[string]string{"WafRateLimit": "9"}, []string{"WafRateLimitIsOffOrAtLeast10"}},
		{map[string]string{"WafRateLimit": "1"}, []string{"WafRateLimitIsOffOrAtLeast10"}},
		{map[string]string{"WafRateLimit": "10"}, nil},
		{map[string]string{"WafInstanceRateLimit": "5"}, []string{"WafInstanceRateLimitIsOffOrAtLeast10"}},
		{map[string]string{"WafInstanceRateLimit": "0"}, nil},
	}
	var sets []map[string]string
	for _, c := range cases {
		sets = append(sets, c.set)
	}
	for i, s := range translate(t, sets...) {
		if got := s.rulesFailing(); !slices.Equal(got, cases[i].want) {
			t.Errorf("%v: rules failing %q, want %q", cases[i].set, got, cases[i].want)
		}
	}
}

// TestTranslatedWafByDefault: with the default parameters a web ACL guards
// the stage, with a rate rule per source address, one per token and one
// per instance (the path, whose segment it is) counting only requests
// whose token names a key of the deployment; WafRateLimit 0 turns it off.
func TestTranslatedWafByDefault(t *testing.T) {
	stacks := translate(t, map[string]string{}, map[string]string{"WafInstanceRateLimit": "0", "WafTokenRateLimit": "0"}, map[string]string{"WafRateLimit": "0"},
		map[string]string{"TokenKeyIds": "2026-11,demo"})
	acl := stacks[0].ofType("AWS::WAFv2::WebACL")["WebAcl"]
	assoc := stacks[0].ofType("AWS::WAFv2::WebACLAssociation")["WebAclAssociation"]
	if acl == nil || assoc == nil || tplAt(assoc, "Properties", "WebACLArn") != "getatt(WebAcl.Arn)" ||
		!strings.Contains(fmt.Sprint(tplAt(assoc, "Properties", "ResourceArn")), "/stages/") {
		t.Fatalf("no web ACL on the stage by default: %v %v", acl, assoc)
	}
	rules := func(s *cfnStack) map[string]any {
		out := map[string]any{}
		for _, r := range tplList(tplAt(s.ofType("AWS::WAFv2::WebACL")["WebAcl"], "Properties", "Rules")) {
			out[fmt.Sprint(tplAt(r, "Name"))] = tplAt(r, "Statement", "RateBasedStatement")
		}
		return out
	}
	got := rules(stacks[0])
	if tplAt(got["PerIpRate"], "AggregateKeyType") != "IP" || tplAt(got["PerIpRate"], "Limit") != "3000" {
		t.Errorf("per address: %v", got["PerIpRate"])
	}
	if tplAt(got["PerInstanceRate"], "AggregateKeyType") != "CUSTOM_KEYS" || tplAt(got["PerInstanceRate"], "CustomKeys", 0, "UriPath") == nil || tplAt(got["PerInstanceRate"], "Limit") != "6000" {
		t.Errorf("per instance: %v", got["PerInstanceRate"])
	}
	if tplAt(got["PerTokenRate"], "AggregateKeyType") != "CUSTOM_KEYS" || tplAt(got["PerTokenRate"], "CustomKeys", 0, "Header", "Name") != "authorization" || tplAt(got["PerTokenRate"], "Limit") != "3000" {
		t.Errorf("per token: %v", got["PerTokenRate"])
	}
	// What the per-instance rule counts: a token of the deployment's keys,
	// never a stranger's junk (WAF's regular expressions are PCRE; this one
	// reads the same in Go's).
	signer, err := access.NewSigner("demo")
	if err != nil {
		t.Fatal(err)
	}
	token, _, _ := signer.Mint("acme", erp.Limits{})
	limited, _, _ := signer.Mint("acme", erp.Limits{ReadOnly: true})
	other, _ := access.NewSigner("elsewhere")
	foreign, _, _ := other.Mint("acme", erp.Limits{})
	for i, keyIDs := range map[int]string{0: "any", 3: "2026-11,demo"} {
		scope := tplAt(rules(stacks[i])["PerInstanceRate"], "ScopeDownStatement", "RegexMatchStatement")
		re := regexp.MustCompile(fmt.Sprint(tplAt(scope, "RegexString")))
		if tplAt(scope, "FieldToMatch", "SingleHeader", "Name") != "authorization" {
			t.Errorf("TokenKeyIds %s: the scope-down reads %v", keyIDs, tplAt(scope, "FieldToMatch"))
		}
		for header, counts := range map[string]bool{
			"Bearer " + token: true, "Bearer " + limited: true, "Bearer " + foreign: keyIDs == "any",
			"": false, "Bearer junk": false, "Bearer erpgw_demo_x_y": false, "Basic " + token: false,
		} {
			if re.MatchString(header) != counts {
				t.Errorf("TokenKeyIds %s: %q counts per instance: %v, want %v", keyIDs, header, !counts, counts)
			}
		}
	}
	// The size rule stays: it is no rate.
	if got := rules(stacks[1]); len(got) != 2 || got["PerIpRate"] == nil || !slices.Contains(slices.Collect(maps.Keys(got)), "BodyTooLarge") {
		t.Errorf("WafInstanceRateLimit and WafTokenRateLimit 0: rules %v", got)
	}
	if len(stacks[2].ofType("AWS::WAFv2::WebACL")) != 0 {
		t.Error("WafRateLimit 0 still makes a web ACL")
	}
}

// TestTranslatedTlsPolicy: the API's own execute-api hostname and the custom
// domain speak TLS 1.3 and 1.2 (strong ciphers) by default, as clients of
// the original IIS service may need, in the STRICT endpoint access mode AWS
// recommends for an enhanced policy; TLS 1.3 alone when asked; the legacy
// TLS_1_2 goes without one. The tokens cross whichever a deployment serves.
func TestTranslatedTlsPolicy(t *testing.T) {
	domain := map[string]string{"DomainName": "erp-api.example.com", "CertificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/1"}
	legacy := maps.Clone(domain)
	legacy["TlsPolicy"] = "TLS_1_2"
	only13 := maps.Clone(domain)
	only13["TlsPolicy"] = "SecurityPolicy_TLS13_1_3_2025_09"
	want := []string{"SecurityPolicy_TLS13_1_2_2021_06", "TLS_1_2", "SecurityPolicy_TLS13_1_2_2021_06", "SecurityPolicy_TLS13_1_3_2025_09"}
	for i, s := range translate(t, domain, legacy, map[string]string{}, only13) {
		for typ, id := range map[string]string{"AWS::ApiGateway::DomainName": "CustomDomain", "AWS::ApiGateway::RestApi": "Api"} {
			d := s.ofType(typ)[id]
			if d == nil && typ == "AWS::ApiGateway::DomainName" && i == 2 {
				continue // no custom domain
			}
			policy, mode := tplAt(d, "Properties", "SecurityPolicy"), tplAt(d, "Properties", "EndpointAccessMode")
			if policy != want[i] || i != 1 && mode != "STRICT" || i == 1 && mode != nil {
				t.Errorf("stack %d, %s: SecurityPolicy %v, EndpointAccessMode %v", i, id, policy, mode)
			}
		}
	}
}

// TestTranslatedFunctionSettings: ReservedConcurrency 0 reserves nothing
// (an account whose quota leaves nothing to reserve can deploy), and the log
// level reaches the functions while Lambda's own filter lets every line pass
// (TestRequestLineAtEveryLogLevel runs the binary with what these give).
func TestTranslatedFunctionSettings(t *testing.T) {
	stacks := translate(t, map[string]string{}, map[string]string{"ReservedConcurrency": "0", "LogLevel": "ERROR"})
	for _, fn := range []string{"ExecuteQueryFunction", "ExecuteFunction"} {
		for i, want := range []map[string]any{
			{"ReservedConcurrentExecutions": "10", "GATEWAY_LOG_LEVEL": "INFO", "ApplicationLogLevel": "DEBUG"},
			{"GATEWAY_LOG_LEVEL": "ERROR", "ApplicationLogLevel": "DEBUG"},
		} {
			props := tplAt(stacks[i].resources, fn, "Properties")
			got := tplPick(props, "ReservedConcurrentExecutions")
			maps.Copy(got, tplPick(tplAt(props, "Environment", "Variables"), "GATEWAY_LOG_LEVEL"))
			maps.Copy(got, tplPick(tplAt(props, "LoggingConfig"), "ApplicationLogLevel"))
			tplSame(t, fn, got, want)
		}
	}
}
