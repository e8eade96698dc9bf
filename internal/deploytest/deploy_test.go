package deploytest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/warpcli"
)

// repoFile returns the path of a file of the repository (tests run in
// internal/deploytest).
func repoFile(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join("..", "..", rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return p
}

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(repoFile(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// commandFlags returns the long flags `warp COMMAND --help` lists.
func commandFlags(t *testing.T, command string) map[string]bool {
	t.Helper()
	var out, errb bytes.Buffer
	c := &warpcli.CLI{Stdout: &out, Stderr: &errb, LookupEnv: func(string) (string, bool) { return "", false }}
	if code := c.Run(context.Background(), []string{command, "--help"}); code != 0 {
		t.Fatalf("warp %s --help: exit %d: %s", command, code, errb.String())
	}
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9-]+)`).FindAllStringSubmatch(out.String(), -1) {
		flags[m[1]] = true
	}
	if !flags["help"] || len(flags) < 2 {
		t.Fatalf("could not read the flags of warp %s --help:\n%s", command, out.String())
	}
	return flags
}

// checkServeArgs checks args (after "serve"): every --flag is one of
// `warp serve`'s and has a value; it returns the values by flag.
func checkServeArgs(t *testing.T, where string, args []string) map[string]string {
	t.Helper()
	return checkArgs(t, where, "serve", args)
}

// checkArgs checks args (after the command): every --flag is one of
// `warp command`'s and has a value; it returns the values by flag.
func checkArgs(t *testing.T, where, command string, args []string) map[string]string {
	t.Helper()
	known := commandFlags(t, command)
	vals := map[string]string{}
	for i := 0; i < len(args); i++ {
		name, ok := strings.CutPrefix(args[i], "--")
		if !ok {
			t.Errorf("%s: %q is not a flag", where, args[i])
			continue
		}
		name, val, hasVal := strings.Cut(name, "=")
		if !known[name] {
			t.Errorf("%s: --%s is not a flag of warp %s", where, name, command)
		}
		if !hasVal {
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "--") {
				t.Errorf("%s: --%s has no value", where, name)
				continue
			}
			i++
			val = args[i]
		}
		vals[name] = val
	}
	return vals
}

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line int
	cmd  string // upper case: FROM, RUN, ...
	args string
}

// stage is one FROM and what follows it.
type stage struct {
	from, name string
	ins        []instruction
}

func (s stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.ins {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// parseDockerfile splits a Dockerfile into stages of instructions:
// comments and blank lines are skipped, a line ending in \ continues on
// the next one.
func parseDockerfile(t *testing.T, text string) []stage {
	t.Helper()
	var stages []stage
	var cur strings.Builder
	start := 0
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if strings.HasPrefix(trimmed, "#") { // a comment inside a continuation
			continue
		}
		if c, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur.WriteString(c + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		in := instruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		cur.Reset()
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			s := stage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) == 0 {
			t.Fatalf("Dockerfile line %d: %s before any FROM", in.line, in.cmd)
		}
		stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, in)
	}
	return stages
}

// goVersion returns the major.minor of go.mod's go directive ("1.26").
func goVersion(t *testing.T) string {
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(read(t, "go.mod"))
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	return m[1]
}

func TestDockerfile(t *testing.T) {
	stages := parseDockerfile(t, read(t, "deploy/Dockerfile"))
	if len(stages) != 2 {
		t.Fatalf("want 2 stages (builder, final), got %d", len(stages))
	}
	build, final := stages[0], stages[1]

	// The builder: the toolchain go.mod asks for, a static stripped warp.
	if want := "golang:" + goVersion(t); build.from != want && !strings.HasPrefix(build.from, want+".") && !strings.HasPrefix(build.from, want+"-") {
		t.Errorf("builder FROM %s, want %s (go.mod's go version)", build.from, want)
	}
	var buildCmd string
	for _, in := range build.all("RUN") {
		if strings.Contains(in.args, "go build") {
			buildCmd = in.args
		}
	}
	for _, want := range []string{"CGO_ENABLED=0 go build", "-s -w", "./cmd/warp", "-o /out/warp", "internal/version.version="} {
		if !strings.Contains(buildCmd, want) {
			t.Errorf("builder's go build lacks %q: %s", want, buildCmd)
		}
	}

	checkFinalStage(t, "deploy/Dockerfile", final, func(args string) bool { return strings.Contains(args, "--from="+build.name) })
	// The image is stamped like the release: version and commit.
	if !strings.Contains(buildCmd, "internal/version.commit=${REVISION}") {
		t.Errorf("builder's go build does not stamp the commit (REVISION): %s", buildCmd)
	}
}

// goreleaser builds the same final image from the release's binary: the
// build context holds it under the target platform's directory.
func TestGoreleaserDockerfile(t *testing.T) {
	stages := parseDockerfile(t, read(t, "deploy/Dockerfile.goreleaser"))
	if len(stages) != 1 {
		t.Fatalf("want 1 stage (the release binary is copied in, not built), got %d", len(stages))
	}
	checkFinalStage(t, "deploy/Dockerfile.goreleaser", stages[0], func(args string) bool {
		return strings.HasPrefix(args, "${TARGETPLATFORM}/warp ")
	})
	// Both final stages are the same image apart from where the binary
	// and the state directory come from.
	strip := func(s stage) []string {
		var out []string
		for _, in := range s.ins {
			if in.cmd != "COPY" && !(in.cmd == "ARG" && in.args == "TARGETPLATFORM") {
				out = append(out, in.cmd+" "+in.args)
			}
		}
		return out
	}
	src := parseDockerfile(t, read(t, "deploy/Dockerfile"))
	if a, b := strings.Join(strip(src[len(src)-1]), "\n"), strings.Join(strip(stages[0]), "\n"); a != b {
		t.Errorf("the final stages differ:\ndeploy/Dockerfile:\n%s\ndeploy/Dockerfile.goreleaser:\n%s", a, b)
	}
}

// checkFinalStage checks the image warp runs in: static base, non-root,
// the binary at /warp (copied as fromBinary says), its state directory
// owned by its user, OCI labels, a HEALTHCHECK through warp healthcheck,
// and an entrypoint that agrees with warp serve, with the token file
// optional so that WARP_TOKEN alone starts it.
func checkFinalStage(t *testing.T, name string, final stage, fromBinary func(args string) bool) {
	t.Helper()
	if final.from != "scratch" && !strings.HasPrefix(final.from, "gcr.io/distroless/static") {
		t.Errorf("%s: final FROM %s: want gcr.io/distroless/static-* or scratch (a static binary needs no libc)", name, final.from)
	}
	users := final.all("USER")
	if len(users) == 0 {
		t.Fatalf("%s: final stage has no USER: the server would run as root", name)
	}
	user := users[len(users)-1].args
	uid, _, _ := strings.Cut(user, ":")
	if uid == "root" || uid == "0" || uid == "" {
		t.Errorf("%s: USER %s runs as root", name, user)
	}
	var binary, state bool
	for _, in := range final.all("COPY") {
		f := strings.Fields(in.args)
		dst := f[len(f)-1]
		if dst == "/warp" && fromBinary(in.args) {
			binary = true
		}
		if dst == "/var/lib/warp" && strings.Contains(in.args, "--chown="+uid+":") {
			state = true
		}
	}
	if !binary {
		t.Errorf("%s: final stage does not copy the built warp to /warp", name)
	}
	if !state {
		t.Errorf("%s: final stage does not create /var/lib/warp owned by %s: a new volume would be root's and warp could not write its database", name, uid)
	}

	// OCI labels: what it is, where it comes from, which version.
	labels := map[string]string{}
	for _, in := range final.all("LABEL") {
		for _, m := range regexp.MustCompile(`([a-z.]+)="([^"]*)"`).FindAllStringSubmatch(in.args, -1) {
			labels[m[1]] = m[2]
		}
	}
	for _, k := range []string{"title", "description", "source", "licenses", "version", "revision"} {
		if labels["org.opencontainers.image."+k] == "" {
			t.Errorf("%s: no LABEL org.opencontainers.image.%s", name, k)
		}
	}
	if labels["org.opencontainers.image.version"] != "${VERSION}" || labels["org.opencontainers.image.revision"] != "${REVISION}" {
		t.Errorf("%s: version and revision labels are %q and %q, want ${VERSION} and ${REVISION} (build arguments)", name,
			labels["org.opencontainers.image.version"], labels["org.opencontainers.image.revision"])
	}
	if lic := strings.TrimSpace(strings.SplitN(read(t, "LICENSE"), "\n", 2)[0]); !strings.Contains(lic, "Apache License") || labels["org.opencontainers.image.licenses"] != "Apache-2.0" {
		t.Errorf("%s: licenses label %q does not match LICENSE (%q)", name, labels["org.opencontainers.image.licenses"], lic)
	}

	// Volume, port, entrypoint and health check agree with each other and
	// with warp.
	vols := final.all("VOLUME")
	if len(vols) != 1 || !strings.Contains(vols[0].args, "/var/lib/warp") {
		t.Errorf("%s: VOLUME = %v, want /var/lib/warp", name, vols)
	}
	exposes := final.all("EXPOSE")
	if len(exposes) != 1 || exposes[0].args != "7077" {
		t.Errorf("%s: EXPOSE = %v, want 7077", name, exposes)
	}
	eps := final.all("ENTRYPOINT")
	if len(eps) != 1 {
		t.Fatalf("%s: want one ENTRYPOINT, got %d", name, len(eps))
	}
	var argv []string
	if err := json.Unmarshal([]byte(eps[0].args), &argv); err != nil {
		t.Fatalf("%s: ENTRYPOINT is not the exec (JSON) form, so signals would not reach warp: %v", name, err)
	}
	if len(argv) < 2 || argv[0] != "/warp" || argv[1] != "serve" {
		t.Fatalf("%s: ENTRYPOINT %q does not run /warp serve", name, argv)
	}
	vals := checkServeArgs(t, name+" ENTRYPOINT", argv[2:])
	want := map[string]string{"addr": "0.0.0.0:7077", "db": "/var/lib/warp/warp.db", "token-file": "/etc/warp/tokens", "token-file-optional": "true"}
	for k, v := range want {
		if vals[k] != v {
			t.Errorf("%s: ENTRYPOINT --%s %q, want %q", name, k, vals[k], v)
		}
	}

	hcs := final.all("HEALTHCHECK")
	if len(hcs) != 1 {
		t.Fatalf("%s: want one HEALTHCHECK, got %d", name, len(hcs))
	}
	_, execForm, ok := strings.Cut(hcs[0].args, "CMD ")
	var hc []string
	if !ok || json.Unmarshal([]byte(execForm), &hc) != nil {
		t.Fatalf("%s: HEALTHCHECK %q is not CMD in the exec (JSON) form: the image has no shell", name, hcs[0].args)
	}
	if len(hc) < 2 || hc[0] != "/warp" || hc[1] != "healthcheck" {
		t.Fatalf("%s: HEALTHCHECK runs %q, want /warp healthcheck", name, hc)
	}
	hv := checkArgs(t, name+" HEALTHCHECK", "healthcheck", hc[2:])
	if u := hv["url"]; u != "" && u != "http://127.0.0.1:"+exposes[0].args {
		t.Errorf("%s: HEALTHCHECK --url %s, want the exposed port on loopback", name, u)
	}
	m := regexp.MustCompile(`--timeout=(\S+)`).FindStringSubmatch(hcs[0].args)
	if m == nil {
		t.Fatalf("%s: HEALTHCHECK has no --timeout= of its own", name)
	}
	dockerTimeout, err := time.ParseDuration(m[1])
	if err != nil {
		t.Fatalf("%s: HEALTHCHECK --timeout=%s: %v", name, m[1], err)
	}
	own := warpcli.DefaultHealthcheckTimeout
	if v := hv["timeout"]; v != "" {
		if own, err = time.ParseDuration(v); err != nil {
			t.Fatalf("%s: warp healthcheck --timeout %s: %v", name, v, err)
		}
	}
	if own >= dockerTimeout {
		t.Errorf("%s: warp healthcheck gives up after %s, not before the HEALTHCHECK's %s: docker would kill it first", name, own, dockerTimeout)
	}
}

// The build context excludes what it should and keeps what the build needs.
func TestDockerignore(t *testing.T) {
	ignored := map[string]bool{}
	for _, l := range strings.Split(read(t, "deploy/Dockerfile.dockerignore"), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			ignored[l] = true
		}
	}
	if !ignored[".git"] {
		t.Errorf(".git is sent to the builder")
	}
	for _, need := range []string{"go.mod", "go.sum", "client", "cmd", "internal", "*.go", "**/*.go"} {
		if ignored[need] {
			t.Errorf("%s is ignored but the build needs it", need)
		}
	}
}

// unit is a parsed systemd unit: section → key → values in order.
type unit map[string]map[string][]string

func parseUnit(t *testing.T, text string) unit {
	t.Helper()
	u := unit{}
	section := ""
	for n, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, ";"):
		case strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]"):
			section = l[1 : len(l)-1]
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(l, "=")
			if !ok || section == "" {
				t.Fatalf("warp.service line %d: %q is not KEY=VALUE in a section", n+1, l)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	return u
}

func TestSystemdUnitKeys(t *testing.T) {
	u := parseUnit(t, read(t, "deploy/warp.service"))
	svc := u["Service"]
	for k, want := range map[string]string{
		"DynamicUser":             "yes",
		"StateDirectory":          "warp",
		"ProtectSystem":           "strict",
		"ProtectHome":             "yes",
		"PrivateTmp":              "yes",
		"NoNewPrivileges":         "yes",
		"RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
		"SystemCallFilter":        "@system-service",
		"LoadCredential":          "tokens:/etc/warp/tokens",
		"CapabilityBoundingSet":   "",
	} {
		found := false
		for _, v := range svc[k] {
			found = found || v == want
		}
		if !found {
			t.Errorf("[Service] lacks %s=%s (has %q)", k, want, svc[k])
		}
	}
	if got := u["Install"]["WantedBy"]; len(got) != 1 || got[0] != "multi-user.target" {
		t.Errorf("[Install] WantedBy = %q, want multi-user.target", got)
	}
	exec := svc["ExecStart"]
	if len(exec) != 1 {
		t.Fatalf("want one ExecStart, got %q", exec)
	}
	argv := strings.Fields(exec[0])
	if len(argv) < 2 || argv[0] != "/usr/local/bin/warp" || argv[1] != "serve" {
		t.Fatalf("ExecStart %q does not run /usr/local/bin/warp serve", exec[0])
	}
	vals := checkServeArgs(t, "ExecStart", argv[2:])
	// The database in the state directory, the token file from the
	// credential LoadCredential names.
	if vals["db"] != "${STATE_DIRECTORY}/warp.db" {
		t.Errorf("ExecStart --db %q, want ${STATE_DIRECTORY}/warp.db", vals["db"])
	}
	cred, _, _ := strings.Cut(svc["LoadCredential"][0], ":")
	if vals["token-file"] != "${CREDENTIALS_DIRECTORY}/"+cred {
		t.Errorf("ExecStart --token-file %q, want ${CREDENTIALS_DIRECTORY}/%s", vals["token-file"], cred)
	}
}

// analyzableUnit writes deploy/warp.service into a temporary directory
// with its binary pointed at an executable that exists here (verify checks
// it), plus extra lines in [Service].
func analyzableUnit(t *testing.T, extra string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "warp")
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(read(t, "deploy/warp.service"), "ExecStart=/usr/local/bin/warp ", "ExecStart="+bin+" ", 1)
	text = strings.Replace(text, "[Service]\n", "[Service]\n"+extra, 1)
	path := filepath.Join(dir, "warp.service")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSystemdAnalyzeVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (Debian: package systemd): the unit is checked by TestSystemdUnitKeys only")
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(analyze, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		return strings.TrimSpace(stderr.String()), err
	}
	path := analyzableUnit(t, "")
	// verify exits 0 on unknown keys and bad values, only warning: any
	// message is a defect in the unit.
	if msg, err := run("verify", path); err != nil || msg != "" {
		t.Errorf("systemd-analyze verify: %v\n%s", err, msg)
	}
	// The check itself catches a broken unit.
	if msg, _ := run("verify", analyzableUnit(t, "ProtectSystm=strict\n")); !strings.Contains(msg, "ProtectSystm") {
		t.Errorf("systemd-analyze verify did not report an unknown key (%q): the check proves nothing", msg)
	}

	// The hardening keeps the exposure level "OK" (2.0 or less of 10).
	msg, err := run("security", "--offline=yes", "--threshold=20", path)
	if strings.Contains(msg, "unrecognized option") || strings.Contains(msg, "Unknown option") {
		t.Skipf("this systemd-analyze has no offline security analysis: %s", msg)
	}
	if err != nil {
		out, _ := exec.Command(analyze, "security", "--offline=yes", path).Output()
		t.Errorf("systemd-analyze security: exposure above 2.0 (%v):\n%s", err, out)
	}
}

func TestTokensExample(t *testing.T) {
	text := read(t, "deploy/tokens.example")
	// As shipped it grants nothing: every line is a comment.
	toks, err := httpapi.ParseTokens("tokens.example", strings.NewReader(text))
	if err != nil || len(toks) != 0 {
		t.Errorf("tokens.example as shipped: %d tokens, %v; want none", len(toks), err)
	}
	if !strings.Contains(text, "openssl rand -hex 32") {
		t.Errorf("tokens.example does not say how to generate a token")
	}
	// Filled in as it says (uncomment, put generated tokens), the server's
	// own parser reads an admin and two agent tokens.
	var filled []string
	for _, l := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(l, "# "); ok && (strings.HasPrefix(rest, "admin:") || strings.HasPrefix(rest, "agent:")) {
			role, _, _ := strings.Cut(rest, ":")
			b := make([]byte, 32)
			rand.Read(b)
			l = role + ":" + hex.EncodeToString(b)
		}
		filled = append(filled, l)
	}
	toks, err = httpapi.ParseTokens("tokens", strings.NewReader(strings.Join(filled, "\n")))
	if err != nil {
		t.Fatalf("filled-in example: %v", err)
	}
	roles := map[httpapi.Role]int{}
	for _, tk := range toks {
		roles[tk.Role]++
	}
	if roles[httpapi.RoleAdmin] != 1 || roles[httpapi.RoleAgent] != 2 {
		t.Errorf("filled-in example has roles %v, want 1 admin and 2 agent", roles)
	}
}
