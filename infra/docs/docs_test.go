// Package docs holds the operator's guide (infra/README.md, its index, and
// the pages beside this file) to itself and to the code: every link between
// the README and the guide resolves, every page opens with its contents, and
// the layout names every package of the module.
package docs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's top, seen from this directory.
const root = "../.."

// guide is the guide's index and its pages; docs adds the README.
func guide(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "infra", "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages in infra/docs (%v)", err)
	}
	return append([]string{filepath.Join(root, "infra", "README.md")}, pages...)
}

func docs(t *testing.T) []string {
	return append([]string{filepath.Join(root, "README.md")}, guide(t)...)
}

// rel names a file as the repository does.
func rel(file string) string {
	if r, err := filepath.Rel(root, file); err == nil {
		return filepath.ToSlash(r)
	}
	return file
}

func read(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// prose is a document's lines outside fenced code blocks (a fence's own
// lines included, as empty lines, so that line numbers hold).
func prose(doc string) []string {
	var lines []string
	fenced := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimLeft(line, " "), "```") {
			fenced = !fenced
			line = ""
		}
		if fenced {
			line = ""
		}
		lines = append(lines, line)
	}
	return lines
}

type heading struct {
	level  int
	anchor string
}

var headingLine = regexp.MustCompile(`^(#{1,6}) +(.+?) *$`)

// headings are a document's headings with their anchors, as GitHub makes
// them: lower case, each space a '-', punctuation other than '-' and '_'
// dropped, and a repeated anchor followed by -1, -2...
func headings(doc string) []heading {
	var out []heading
	seen := map[string]bool{}
	for _, line := range prose(doc) {
		m := headingLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[2]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-', r == '_', unicode.IsLetter(r), unicode.IsDigit(r), unicode.IsMark(r):
				b.WriteRune(r)
			}
		}
		anchor := b.String()
		for n := 1; seen[anchor]; n++ {
			anchor = fmt.Sprintf("%s-%d", b.String(), n)
		}
		seen[anchor] = true
		out = append(out, heading{len(m[1]), anchor})
	}
	return out
}

var (
	codeSpan = regexp.MustCompile("`[^`]*`")
	link     = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]*)\)`)
)

// anchorsIn returns a function giving a markdown file's anchors, each file
// read once.
func anchorsIn(t *testing.T) func(file string) []string {
	anchors := map[string][]string{}
	return func(file string) []string {
		if _, ok := anchors[file]; !ok {
			anchors[file] = []string{}
			for _, h := range headings(read(t, file)) {
				anchors[file] = append(anchors[file], h.anchor)
			}
		}
		return anchors[file]
	}
}

// TestLinksResolve: every relative link of the README and the guide names a
// file that exists and, after a '#', a heading of that file.
func TestLinksResolve(t *testing.T) {
	anchorsOf := anchorsIn(t)
	links := 0
	for _, doc := range docs(t) {
		for i, line := range prose(read(t, doc)) {
			for _, m := range link.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
				target := m[1]
				if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				at := fmt.Sprintf("%s:%d: %s", rel(doc), i+1, target)
				path, anchor, _ := strings.Cut(target, "#")
				file := doc
				if path != "" {
					file = filepath.Join(filepath.Dir(doc), path)
					if _, err := os.Stat(file); err != nil {
						t.Errorf("%s: no such file", at)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(file, ".md") {
					t.Errorf("%s: an anchor in a file that is not markdown", at)
				} else if !slices.Contains(anchorsOf(file), anchor) {
					t.Errorf("%s: %s has no heading whose anchor is #%s", at, rel(file), anchor)
				}
			}
		}
	}
	if links < 100 {
		t.Errorf("found only %d relative links: is the link pattern still right?", links)
	}
}

var contentsLine = regexp.MustCompile(`^ *- \[[^\]]*\]\(#([^)]+)\)$`)

// TestPagesBeginWithTheirContents: each page of the guide is under 600
// lines, and after its title comes its table of contents, which links to
// every section and subsection, in order, and to nothing else.
func TestPagesBeginWithTheirContents(t *testing.T) {
	for _, page := range guide(t) {
		doc := read(t, page)
		if n := strings.Count(doc, "\n"); n >= 600 {
			t.Errorf("%s has %d lines: split it (under 600 a page)", rel(page), n)
		}
		lines := strings.Split(doc, "\n")
		if !strings.HasPrefix(lines[0], "# ") {
			t.Errorf("%s does not begin with its title (# ...)", rel(page))
			continue
		}
		var contents, sections []string
		for _, line := range lines[1:] {
			if m := contentsLine.FindStringSubmatch(line); m != nil {
				contents = append(contents, m[1])
			} else if line != "" || len(contents) > 0 {
				break
			}
		}
		for _, h := range headings(doc) {
			if h.level > 1 {
				sections = append(sections, h.anchor)
			}
		}
		if !slices.Equal(contents, sections) {
			t.Errorf("%s: its contents after the title link to\n\t%v\nits sections are\n\t%v", rel(page), contents, sections)
		}
	}
}

// TestLayoutNamesEveryPackage: the layout's picture (internals.md, Layout)
// names every directory of the module that holds Go files (third_party and
// testdata left out), every path it names exists, and every file a line of
// it names is in that line's directories.
func TestLayoutNamesEveryPackage(t *testing.T) {
	doc := read(t, filepath.Join(root, "infra", "docs", "internals.md"))
	_, section, ok := strings.Cut(doc, "\n## Layout\n")
	if !ok {
		t.Fatal("internals.md has no ## Layout")
	}
	_, picture, ok := strings.Cut(section, "\n```\n")
	picture, _, ok2 := strings.Cut(picture, "\n```\n")
	if !ok || !ok2 {
		t.Fatal("internals.md's Layout has no picture (a ``` block)")
	}
	named := map[string]bool{} // directories the picture names
	var entry, dirs []string   // the line being read: its paths' directories
	fileName := regexp.MustCompile(`[\w.-]+\.(?:go|json|sql)\b`)
	checkFiles := func(description string) {
		if len(dirs) == 0 {
			return
		}
		for _, f := range fileName.FindAllString(description, -1) {
			found := false
			for _, d := range dirs {
				if _, err := os.Stat(filepath.Join(root, d, f)); err == nil {
					found = true
				}
			}
			if !found {
				t.Errorf("the layout's line for %s names %s, which is not in %s", strings.Join(entry, ", "), f, strings.Join(dirs, " or "))
			}
		}
	}
	for _, line := range strings.Split(picture, "\n") {
		if strings.HasPrefix(line, " ") {
			checkFiles(line)
			continue
		}
		paths, description, _ := strings.Cut(line, "  ")
		entry, dirs = strings.Split(paths, ", "), nil
		for _, p := range entry {
			if strings.ContainsAny(p, "*?[") {
				if m, _ := filepath.Glob(filepath.Join(root, p)); len(m) == 0 {
					t.Errorf("the layout names %s, which matches nothing", p)
				}
				named[filepath.Dir(p)] = true
				continue
			}
			info, err := os.Stat(filepath.Join(root, p))
			switch {
			case err != nil:
				t.Errorf("the layout names %s, which does not exist", p)
			case strings.HasSuffix(p, "/") && !info.IsDir():
				t.Errorf("the layout names %s, which is not a directory", p)
			case strings.HasSuffix(p, "/"):
				named[strings.TrimSuffix(p, "/")] = true
				dirs = append(dirs, p)
			default:
				named[filepath.Dir(p)] = true
			}
		}
		checkFiles(description)
	}
	packages := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (strings.HasPrefix(name, ".") || name == "third_party" || name == "testdata" || name == "bin") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".go") {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			packages[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir := range packages {
		if !named[dir] {
			t.Errorf("the layout (infra/docs/internals.md) does not name %s/, a directory of Go files", dir)
		}
	}
	if len(packages) < 20 {
		t.Errorf("found only %d directories of Go files: is the walk still right?", len(packages))
	}
}

var (
	section = regexp.MustCompile(`\b(README\.md|infra/README\.md|infra/docs/[\w-]+\.md)(?:#([\w-]+))?`)
	// byTitle is the older way of citing a section, which no test could
	// follow: the document and the title in quotes.
	byTitle = regexp.MustCompile(`(README|guide),? *(?:\n[\t ]*(?://|--)?[\t ]*)?(?:\\?["'])[A-Z]`)
)

// TestTheCodeCitesSectionsThatExist: a comment, message or template that
// sends its reader to the documentation names the page and the heading's
// anchor (infra/docs/configuration.md#tokens), and both exist.
func TestTheCodeCitesSectionsThatExist(t *testing.T) {
	anchorsOf := anchorsIn(t)
	cites := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "third_party" || name == "bin" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(name) {
		case ".go", ".yaml", ".yml", ".json", ".sql", ".sh", ".toml":
		default:
			if name != "Makefile" {
				return nil
			}
		}
		text := read(t, path)
		for _, m := range byTitle.FindAllStringIndex(text, -1) {
			t.Errorf("%s:%d: cites a section by its title; name its page and anchor (README.md#tokens)", rel(path), 1+strings.Count(text[:m[0]], "\n"))
		}
		for _, m := range section.FindAllStringSubmatchIndex(text, -1) {
			page, at := text[m[2]:m[3]], fmt.Sprintf("%s:%d", rel(path), 1+strings.Count(text[:m[0]], "\n"))
			file := filepath.Join(root, filepath.FromSlash(page))
			if _, err := os.Stat(file); err != nil {
				t.Errorf("%s: cites %s, which does not exist", at, page)
				continue
			}
			cites++
			if m[4] >= 0 && !slices.Contains(anchorsOf(file), text[m[4]:m[5]]) {
				t.Errorf("%s: cites %s#%s, a heading %s does not have", at, page, text[m[4]:m[5]], page)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cites < 40 {
		t.Errorf("found only %d citations of the documentation: is the pattern still right?", cites)
	}
}
