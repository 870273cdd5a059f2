package functions_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// makeDryRun is the commands make would run for target, without running them.
func makeDryRun(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("make", append([]string{"-s", "-n", "-C", ".."}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("make -n %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// buildDir is the --build-dir of the one sam build in commands.
func buildDir(t *testing.T, commands string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^.*\bsam build\b.*--build-dir (\S+).*$`).FindAllStringSubmatch(commands, -1)
	if len(m) != 1 {
		t.Fatalf("want one sam build with a --build-dir in:\n%s", commands)
	}
	return m[0][1]
}

// TestMakeDeployShipsTheCatalogItBuilds: sam build's cache does not key on
// CATALOG, so make deploy builds afresh into a directory make local-api (the
// demo catalog) never writes, and deploys what it built; the parameters are
// sent only where PARAMS names them.
func TestMakeDeployShipsTheCatalogItBuilds(t *testing.T) {
	deploy := makeDryRun(t, "deploy", "CATALOG=infra/catalog.demo.json")
	dir := buildDir(t, deploy)
	if !regexp.MustCompile(`(?m)^CATALOG=infra/catalog.demo.json sam build --no-cached `).MatchString(deploy) {
		t.Errorf("make deploy builds from the cache, or without its CATALOG:\n%s", deploy)
	}
	if !regexp.MustCompile(`(?m)^sam deploy --template-file ` + regexp.QuoteMeta(dir) + `/template.yaml\s*$`).MatchString(deploy) {
		t.Errorf("make deploy does not deploy what it built in %s, or sends parameters:\n%s", dir, deploy)
	}
	if local := buildDir(t, makeDryRun(t, "local-api")); local == dir || !strings.Contains(makeDryRun(t, "local-api"), "--template "+local+"/template.yaml") {
		t.Errorf("make local-api builds in %s, make deploy in %s", local, dir)
	}
	if withParams := makeDryRun(t, "deploy", "PARAMS=InterfaceClass=TVendorRestInterface"); !strings.Contains(withParams, "--parameter-overrides InterfaceClass=TVendorRestInterface") {
		t.Errorf("PARAMS does not reach sam deploy:\n%s", withParams)
	}
}

// TestSamconfigKeepsTheStacksParameters: parameter_overrides in samconfig's
// deploy section would be sent on every deploy, replacing the operator's
// values.
func TestSamconfigKeepsTheStacksParameters(t *testing.T) {
	raw, err := os.ReadFile("../samconfig.toml")
	if err != nil {
		t.Fatal(err)
	}
	section := ""
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			section = line
		}
		if strings.HasPrefix(line, "parameter_overrides") {
			t.Errorf("samconfig.toml %s sets parameter_overrides", section)
		}
	}
}
