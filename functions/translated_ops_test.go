package functions_test

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestTranslatedAlarmsAndRollbacks: every alarm notifies the topic when one
// is given; each function's deployment rolls back on the alarms
// RollbackAlarms names; the function alarms watch the alias, canary
// included.
func TestTranslatedAlarmsAndRollbacks(t *testing.T) {
	topic := "arn:aws:sns:us-east-1:123456789012:alarms"
	stacks := translate(t, map[string]string{}, map[string]string{"AlarmTopicArn": topic, "RollbackAlarms": "functions"})
	for i, s := range stacks {
		var actions any
		if i == 1 {
			actions = []any{topic}
		}
		for id, a := range s.ofType("AWS::CloudWatch::Alarm") {
			props := tplAt(a, "Properties")
			tplSame(t, id+" actions", []any{tplAt(props, "AlarmActions"), tplAt(props, "OKActions")}, []any{actions, actions})
			if d, _ := tplAt(props, "AlarmDescription").(string); d == "" || !strings.HasPrefix(tplAt(props, "AlarmName").(string), testStackName+"-") {
				t.Errorf("%s: name %v, description %q", id, tplAt(props, "AlarmName"), d)
			}
		}
		for _, fn := range []string{"ExecuteQuery", "Execute"} {
			own := []string{fn + "ErrorsAlarm", fn + "ThrottlesAlarm"}
			want := map[int][]string{0: append([]string{"Api5xxAlarm", "ApiLatencyAlarm", "UnavailableAlarm"}, own...), 1: own}[i]
			var watched []string
			for _, a := range tplList(tplAt(s.resources, fn+"FunctionDeploymentGroup", "Properties", "AlarmConfiguration", "Alarms")) {
				watched = append(watched, strings.TrimSuffix(strings.TrimPrefix(tplAt(a, "Name").(string), "ref("), ")"))
			}
			tplSame(t, fn+" rollback alarms", watched, want)
			for _, alarm := range own {
				tplSame(t, alarm+" dimensions", tplAt(s.resources, alarm, "Properties", "Dimensions"), []any{
					map[string]any{"Name": "FunctionName", "Value": "ref(" + fn + "Function)"},
					map[string]any{"Name": "Resource", "Value": "ref(" + fn + "Function):live"},
				})
			}
		}
	}
}

// TestTranslatedLogGroups: every function logs to a group of its own and the
// API's access log to another, each kept LogRetentionDays and left behind
// when the stack goes (but not when its creation fails: a retry would find
// the name taken).
func TestTranslatedLogGroups(t *testing.T) {
	s := translate(t, map[string]string{"LogRetentionDays": "7"})[0]
	used := map[string]string{}
	for fn, f := range s.ofType("AWS::Lambda::Function") {
		tplSame(t, fn+" log format", tplPick(tplAt(f, "Properties", "LoggingConfig"), "LogFormat", "SystemLogLevel"), map[string]any{"LogFormat": "JSON", "SystemLogLevel": "WARN"})
		used[strings.TrimSuffix(strings.TrimPrefix(tplAt(f, "Properties", "LoggingConfig", "LogGroup").(string), "ref("), ")")] = fn
	}
	arn, _ := tplAt(s.resources, "ApiStage", "Properties", "AccessLogSetting", "DestinationArn").(string)
	used[strings.TrimSuffix(strings.TrimPrefix(arn, "getatt("), ".Arn)")] = "ApiStage"
	groups := s.ofType("AWS::Logs::LogGroup")
	tplSame(t, "log groups", slices.Sorted(maps.Keys(used)), slices.Sorted(maps.Keys(groups)))
	for id, g := range groups {
		tplSame(t, id, []any{tplAt(g, "Properties", "RetentionInDays"), tplAt(g, "DeletionPolicy")}, []any{"7", "RetainExceptOnCreate"})
		if name, _ := tplAt(g, "Properties", "LogGroupName").(string); !strings.Contains(name, "/"+testStackName+"-") {
			t.Errorf("%s is named %q, not after the stack", id, name)
		}
	}
}
