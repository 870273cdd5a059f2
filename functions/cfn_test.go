package functions_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// What CloudFormation receives is SAM's translation of template.yaml
// (infra/samtranslate/translate.py runs SAM's own translator); what it
// creates is that translation with the intrinsic functions evaluated for the
// parameter values. cfnStack is the second: the resources whose condition
// holds, their properties resolved. References to resources stay symbolic
// ("ref(Api)", "getatt(FunctionRole.Arn)"): only AWS knows their values.

// The pseudo parameters of the stack the tests deploy, unless a test names
// another stack.
const (
	testStackName = "erp-gateway"
	testStackUUID = "5d1ae7c0-8f0e-11ef-9a3b-0a1b2c3d4e5f"
)

// cfnStack is one translation evaluated for one set of parameter values.
type cfnStack struct {
	raw        map[string]any // the translation
	params     map[string]any // string, or []any of strings for a CommaDelimitedList
	pseudo     map[string]string
	conditions map[string]bool
	resources  map[string]any // those created, properties resolved
}

type noValue struct{}

// translate runs SAM's translator on template.yaml once for every set of
// parameter values (one process) and evaluates each translation. The
// stack's name is testStackName unless a set gives "AWS::StackName".
func translate(t *testing.T, sets ...map[string]string) []*cfnStack {
	t.Helper()
	var args []map[string]string
	for _, set := range sets {
		a := map[string]string{}
		for k, v := range set {
			if !strings.HasPrefix(k, "AWS::") {
				a[k] = v
			}
		}
		args = append(args, a)
	}
	in, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	var raws []map[string]any
	runTranslate(t, in, &raws, "--sets", "../template.yaml")
	stacks := make([]*cfnStack, len(sets))
	for i, raw := range raws {
		stacks[i] = evaluate(t, raw, sets[i])
	}
	return stacks
}

// createOnly gives, per resource type, the properties CloudFormation cannot
// change in place: changing one replaces the resource.
func createOnly(t *testing.T, types ...string) map[string][]string {
	t.Helper()
	var out map[string][]string
	runTranslate(t, nil, &out, append([]string{"--create-only"}, types...)...)
	return out
}

// runTranslate fails, never skips, where Python or SAM's translator is
// missing: CI must not pass without these tests.
func runTranslate(t *testing.T, stdin []byte, out any, args ...string) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to translate template.yaml (with pip install aws-sam-translator cfn-lint): %v", err)
	}
	cmd := exec.Command(python, append([]string{"../infra/samtranslate/translate.py"}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("translate.py %s: %v\n%s(pip install aws-sam-translator cfn-lint if a module is missing)", strings.Join(args, " "), err, stderr.String())
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		t.Fatalf("translate.py %s: %v", strings.Join(args, " "), err)
	}
}

func evaluate(t *testing.T, raw map[string]any, set map[string]string) *cfnStack {
	t.Helper()
	name := testStackName
	if n, ok := set["AWS::StackName"]; ok {
		name = n
	}
	s := &cfnStack{raw: raw, params: map[string]any{}, conditions: map[string]bool{}, resources: map[string]any{},
		pseudo: map[string]string{
			"AWS::StackName": name, "AWS::Region": "us-east-1", "AWS::Partition": "aws", "AWS::AccountId": "123456789012",
			"AWS::URLSuffix": "amazonaws.com", "AWS::StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/" + name + "/" + testStackUUID,
		}}
	for p, def := range mapOf(raw["Parameters"]) {
		v, ok := set[p]
		// As CloudFormation checks a value given: its pattern, its list.
		if pattern, _ := tplAt(def, "AllowedPattern").(string); ok && pattern != "" && !regexp.MustCompile(pattern).MatchString(v) {
			t.Fatalf("parameter %s=%q: CloudFormation refuses it (AllowedPattern %s)", p, v, pattern)
		}
		if allowed := tplList(tplAt(def, "AllowedValues")); ok && allowed != nil && !slices.ContainsFunc(allowed, func(a any) bool { return fmt.Sprint(a) == v }) {
			t.Fatalf("parameter %s=%q: CloudFormation refuses it (AllowedValues %v)", p, v, allowed)
		}
		if !ok {
			v = fmt.Sprint(tplAt(def, "Default"))
			if tplAt(def, "Default") == nil {
				t.Fatalf("parameter %s has no default and no value", p)
			}
		}
		if tplAt(def, "Type") == "CommaDelimitedList" {
			var l []any
			for _, e := range strings.Split(v, ",") {
				l = append(l, e)
			}
			s.params[p] = l
		} else {
			s.params[p] = v
		}
	}
	for c := range mapOf(raw["Conditions"]) {
		s.condition(c)
	}
	for id, res := range mapOf(raw["Resources"]) {
		if c, ok := tplAt(res, "Condition").(string); ok && !s.condition(c) {
			continue
		}
		r := map[string]any{}
		for k, v := range mapOf(res) {
			r[k] = s.eval(v)
		}
		s.resources[id] = r
	}
	return s
}

func mapOf(v any) map[string]any { m, _ := v.(map[string]any); return m }

func (s *cfnStack) condition(name string) bool {
	if v, ok := s.conditions[name]; ok {
		return v
	}
	b, _ := s.eval(tplAt(s.raw, "Conditions", name)).(bool)
	s.conditions[name] = b
	return b
}

// ofType gives the created resources of one type by logical id.
func (s *cfnStack) ofType(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range s.resources {
		if r := mapOf(r); r["Type"] == typ {
			out[id] = r
		}
	}
	return out
}

// rulesFailing names the template's Rules whose assertions fail for the
// parameter values: CloudFormation then refuses the stack before changing
// anything.
func (s *cfnStack) rulesFailing() []string {
	var failing []string
	for name, rule := range mapOf(s.raw["Rules"]) {
		if c := tplAt(rule, "RuleCondition"); c != nil && s.eval(c) != true {
			continue
		}
		for _, a := range tplList(tplAt(rule, "Assertions")) {
			if s.eval(tplAt(a, "Assert")) != true {
				failing = append(failing, name)
				break
			}
		}
	}
	slices.Sort(failing)
	return failing
}

var subVar = regexp.MustCompile(`\$\{(!?)([^}]*)\}`)

// eval is CloudFormation's evaluation of the intrinsic functions the
// template uses, and of the Rules' functions.
func (s *cfnStack) eval(v any) any {
	switch v := v.(type) {
	case []any:
		out := []any{}
		for _, e := range v {
			if e := s.eval(e); e != (noValue{}) {
				out = append(out, e)
			}
		}
		return out
	case map[string]any:
		if len(v) == 1 {
			for fn, arg := range v {
				if r, ok := s.intrinsic(fn, arg); ok {
					return r
				}
			}
		}
		out := map[string]any{}
		for k, e := range v {
			if e := s.eval(e); e != (noValue{}) {
				out[k] = e
			}
		}
		return out
	}
	return v
}

func (s *cfnStack) ref(name string) any {
	if name == "AWS::NoValue" {
		return noValue{}
	}
	if v, ok := s.params[name]; ok {
		return v
	}
	if v, ok := s.pseudo[name]; ok {
		return v
	}
	return "ref(" + name + ")"
}

func (s *cfnStack) intrinsic(fn string, arg any) (any, bool) {
	args, _ := arg.([]any)
	str := func(i int) string { x, _ := s.eval(args[i]).(string); return x }
	switch fn {
	case "Ref":
		return s.ref(arg.(string)), true
	case "Condition":
		return s.condition(arg.(string)), true
	case "Fn::GetAtt":
		return "getatt(" + fmt.Sprint(args[0]) + "." + fmt.Sprint(args[1]) + ")", true
	case "Fn::If":
		if s.condition(args[0].(string)) {
			return s.eval(args[1]), true
		}
		return s.eval(args[2]), true
	case "Fn::Equals":
		return reflect.DeepEqual(s.eval(args[0]), s.eval(args[1])), true
	case "Fn::Not":
		return s.eval(args[0]) != true, true
	case "Fn::And", "Fn::Or":
		every, some := true, false
		for _, a := range args {
			b := s.eval(a) == true
			every, some = every && b, some || b
		}
		return (fn == "Fn::And" && every) || (fn == "Fn::Or" && some), true
	case "Fn::Contains":
		return slices.ContainsFunc(s.eval(args[0]).([]any), func(e any) bool { return reflect.DeepEqual(e, s.eval(args[1])) }), true
	case "Fn::EachMemberEquals":
		for _, e := range tplList(s.eval(args[0])) {
			if !reflect.DeepEqual(e, s.eval(args[1])) {
				return false, true
			}
		}
		return true, true
	case "Fn::Join":
		var parts []string
		for _, e := range tplList(s.eval(args[1])) {
			parts = append(parts, fmt.Sprint(e))
		}
		return strings.Join(parts, str(0)), true
	case "Fn::Split":
		var out []any
		for _, e := range strings.Split(str(1), str(0)) {
			out = append(out, e)
		}
		return out, true
	case "Fn::Select":
		i, _ := strconv.Atoi(fmt.Sprint(s.eval(args[0])))
		return tplList(s.eval(args[1]))[i], true
	case "Fn::Sub":
		text, vars := arg, map[string]any{}
		if args != nil {
			text, vars = args[0], mapOf(s.eval(args[1]))
		}
		return subVar.ReplaceAllStringFunc(text.(string), func(m string) string {
			g := subVar.FindStringSubmatch(m)
			switch {
			case g[1] == "!":
				return "${" + g[2] + "}"
			case vars[g[2]] != nil:
				return fmt.Sprint(vars[g[2]])
			case strings.Contains(g[2], ".") && !strings.HasPrefix(g[2], "AWS::"):
				return "getatt(" + g[2] + ")"
			}
			return fmt.Sprint(s.ref(g[2]))
		}), true
	}
	return nil, false
}
