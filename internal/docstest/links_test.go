package docstest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// root is the repository, from internal/docstest.
const root = "../.."

// docFiles returns README.md and every Markdown file under docs/, relative
// to dir.
func docFiles(dir string) ([]string, error) {
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(dir, "docs"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			files = append(files, rel)
		}
		return nil
	})
	sort.Strings(files[1:])
	return files, err
}

var (
	fence      = regexp.MustCompile("^\\s*(```|~~~)")
	inlineCode = regexp.MustCompile("`[^`]*`")
	mdLink     = regexp.MustCompile(`\[[^\]]*\]\(([^()\s]+)\)`)
	heading    = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
)

// proseLines returns the lines of a Markdown text outside fenced code
// blocks, each with its 1-based line number.
func proseLines(text string) (lines []string, numbers []int) {
	in := false
	for i, l := range strings.Split(text, "\n") {
		if fence.MatchString(l) {
			in = !in
			continue
		}
		if !in {
			lines = append(lines, l)
			numbers = append(numbers, i+1)
		}
	}
	return lines, numbers
}

// link is one Markdown link target on a line.
type link struct {
	line   int
	target string
}

// links returns the relative link targets of a Markdown text: not in code,
// not an absolute URL.
func links(text string) []link {
	var out []link
	lines, numbers := proseLines(text)
	for i, l := range lines {
		l = inlineCode.ReplaceAllString(l, "")
		for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
			t := m[1]
			if strings.Contains(t, "://") || strings.HasPrefix(t, "mailto:") {
				continue
			}
			out = append(out, link{line: numbers[i], target: t})
		}
	}
	return out
}

// slug is the anchor GitHub gives a heading: lower case, markup and
// punctuation dropped (letters, digits, '-' and '_' kept), spaces as '-'.
func slug(h string) string {
	h = strings.ReplaceAll(h, "`", "")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// anchors returns every heading anchor of a Markdown text, with GitHub's
// -1, -2 suffixes for repeated headings.
func anchors(text string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	lines, _ := proseLines(text)
	for _, l := range lines {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// brokenLinks checks every relative link of the documentation under dir
// and returns one line per link that does not resolve, and how many links
// it checked.
func brokenLinks(dir string) (broken []string, checked int, err error) {
	files, err := docFiles(dir)
	if err != nil {
		return nil, 0, err
	}
	for _, f := range files {
		text, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return nil, 0, err
		}
		for _, l := range links(string(text)) {
			checked++
			path, frag, _ := strings.Cut(l.target, "#")
			target := filepath.Join(dir, f) // a bare #fragment: this file
			if path != "" {
				target = filepath.Join(dir, filepath.Dir(f), path)
			}
			st, err := os.Stat(target)
			if err != nil {
				broken = append(broken, fmt.Sprintf("%s:%d: %s: no such file", f, l.line, l.target))
				continue
			}
			if frag == "" {
				continue
			}
			if st.IsDir() || !strings.HasSuffix(target, ".md") {
				broken = append(broken, fmt.Sprintf("%s:%d: %s: a #fragment of something that is not a Markdown file", f, l.line, l.target))
				continue
			}
			t, err := os.ReadFile(target)
			if err != nil {
				return nil, 0, err
			}
			if !anchors(string(t))[frag] {
				broken = append(broken, fmt.Sprintf("%s:%d: %s: no heading #%s there", f, l.line, l.target, frag))
			}
		}
	}
	return broken, checked, nil
}

func TestDocumentationLinksResolve(t *testing.T) {
	broken, checked, err := brokenLinks(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Error(b)
	}
	// The README alone links into docs/ more than this: fewer means the
	// link pattern no longer matches what the files hold.
	if checked < 10 {
		t.Errorf("checked %d links, want at least 10", checked)
	}
}

func TestSlugIsGitHubs(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"2. Defaults", "2-defaults"},
		{"Operator commands (`warp`)", "operator-commands-warp"},
		{"The loop (`gyrum heartbeat run`)", "the-loop-gyrum-heartbeat-run"},
		{"(a) The request sequence", "a-the-request-sequence"},
		{"Claude Code, as measured", "claude-code-as-measured"},
		{"warp + gyrum — design", "warp--gyrum--design"},
		{"snake_case and CAPS", "snake_case-and-caps"},
	} {
		if got := slug(c.heading); got != c.want {
			t.Errorf("slug(%q): got %q, want %q", c.heading, got, c.want)
		}
	}
}

func TestLinksSkipCodeAndURLs(t *testing.T) {
	text := strings.Join([]string{
		"See [a](a.md) and [b](docs/b.md#part) and [web](https://example.com/x.md).",
		"Inline `[not](code.md)` is code.",
		"```",
		"[fenced](fenced.md)",
		"```",
		"[self](#here)",
	}, "\n")
	var got []string
	for _, l := range links(text) {
		got = append(got, fmt.Sprintf("%d:%s", l.line, l.target))
	}
	want := []string{"1:a.md", "1:docs/b.md#part", "6:#here"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestBrokenLinksFindsMissingFilesAndHeadings(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "# Top\n\n[ok](docs/A.md#one) [gone](docs/missing.md) [bad](docs/A.md#three)\n[here](#top)\n")
	write("docs/A.md", "# A\n\n## One\n\n## One\n\n[up](../README.md#top) [twin](#one-1) [lost](#nowhere)\n")
	got, checked, err := brokenLinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if checked != 7 {
		t.Errorf("checked %d links, want 7", checked)
	}
	want := []string{
		"README.md:3: docs/missing.md: no such file",
		"README.md:3: docs/A.md#three: no heading #three there",
		"docs/A.md:7: #nowhere: no heading #nowhere there",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
