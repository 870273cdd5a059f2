// Package thirdparty holds the tests of the patched dependencies under
// third_party/ (README.md there): each copy is upstream's release, verbatim,
// plus the patches in patches/, and nothing else.
package thirdparty

import (
	"bytes"
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The release the copy is made from, and its hash as the checksum database
// knows it: a new upstream version changes both (README.md, "A new upstream
// version").
const (
	upstreamModule  = "github.com/nakagami/firebirdsql"
	upstreamVersion = "v0.9.23"
	upstreamSum     = "h1:2MPuhkrIqQzso1PrQCcXhkVmItc9nZJpMNrw1/SThmQ="
)

var update = flag.Bool("update", false, "write the copy afresh: upstream's files, then the patches")

// dropped tells the upstream files the copy leaves out: what the build never
// reads (the driver's own tests, which need a server of their own set up,
// its examples, its attic and its scripts).
func dropped(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return strings.HasSuffix(path, "_test.go") || slices.Contains([]string{"_attic", "_examples", "scripts"}, first)
}

// TestCopyIsUpstreamPlusPatches holds third_party/firebirdsql to upstream's
// release with the patches applied in order, file for file; -update writes
// it so.
func TestCopyIsUpstreamPlusPatches(t *testing.T) {
	upstream := download(t)
	want := t.TempDir()
	var kept, left []string
	err := filepath.WalkDir(upstream, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(upstream, path)
		rel = filepath.ToSlash(rel)
		if dropped(rel) {
			left = append(left, rel)
			return nil
		}
		kept = append(kept, rel)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return write(filepath.Join(want, rel), data)
	})
	if err != nil {
		t.Fatal(err)
	}
	patches, err := filepath.Glob(filepath.Join("patches", "firebirdsql", "*.patch"))
	if err != nil || len(patches) == 0 {
		t.Fatalf("no patches found (%v)", err)
	}
	slices.Sort(patches)
	for _, p := range patches {
		abs, _ := filepath.Abs(p)
		// git apply works outside a repository as a stricter patch(1): a
		// patch that does not apply exactly fails.
		cmd := exec.Command("git", "apply", "--whitespace=nowarn", abs)
		cmd.Dir = want
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s does not apply to %s@%s: %v\n%s", p, upstreamModule, upstreamVersion, err, out)
		}
	}
	t.Logf("%s@%s: %d files kept, %d left out (tests, _attic, _examples, scripts), %d patches", upstreamModule, upstreamVersion, len(kept), len(left), len(patches))

	copyDir := "firebirdsql"
	if *update {
		if err := os.RemoveAll(copyDir); err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(copyDir, os.DirFS(want)); err != nil {
			t.Fatal(err)
		}
	}
	wantFiles, gotFiles := files(t, want), files(t, copyDir)
	for path, data := range wantFiles {
		got, ok := gotFiles[path]
		switch {
		case !ok:
			t.Errorf("%s/%s is missing (go test ./third_party -run Upstream -update writes it)", copyDir, path)
		case !bytes.Equal(got, data):
			t.Errorf("%s/%s differs from upstream with the patches: a change belongs in a patch of patches/firebirdsql", copyDir, path)
		}
	}
	for path := range gotFiles {
		if _, ok := wantFiles[path]; !ok {
			t.Errorf("%s/%s is neither upstream's nor a patch's", copyDir, path)
		}
	}
}

// download fetches the release through the module proxy (or finds it in
// the module cache) and checks its hash.
func download(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", upstreamModule+"@"+upstreamVersion)
	cmd.Dir = t.TempDir() // outside our module, whose replace would answer
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %s@%s: %v", upstreamModule, upstreamVersion, err)
	}
	var mod struct{ Dir, Sum string }
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatal(err)
	}
	if mod.Sum != upstreamSum {
		t.Fatalf("%s@%s has hash %s, want %s", upstreamModule, upstreamVersion, mod.Sum, upstreamSum)
	}
	return mod.Dir
}

func write(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// files reads every file under dir, by its slash-separated path.
func files(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		data, err := os.ReadFile(path)
		out[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
