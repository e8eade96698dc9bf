package trust

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/BurntSushi/toml"
)

// codex checks, in the user's Codex hooks file and the project's, that
// Codex will run gyrum's hooks: it runs a hook only once the user trusted
// that exact hook, and a project's hooks only in a trusted project.
func codex(in Input) []Result {
	codexHome := in.getenv("CODEX_HOME")
	if codexHome == "" {
		codexHome = filepath.Join(in.Home, ".codex")
	}
	out := checkCodexTrust(in, filepath.Join(codexHome, "hooks.json"), codexHome, "")
	if in.Cwd != "" {
		out = append(out, checkCodexTrust(in, filepath.Join(in.Cwd, ".codex", "hooks.json"), codexHome, in.Cwd)...)
	}
	return out
}

// codexHook is one command hook of a Codex hooks.json, where Codex keys it.
type codexHook struct {
	event          string // "PreToolUse"
	group, handler int
	matcher        *string
	fields         map[string]any // the handler object, numbers as json.Number
}

// codexHooks reads the command hooks of a Codex hooks.json.
func codexHooks(data []byte) ([]codexHook, error) {
	var doc struct {
		Hooks map[string][]struct {
			Matcher *string          `json:"matcher"`
			Hooks   []map[string]any `json:"hooks"`
		} `json:"hooks"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	var out []codexHook
	for event, groups := range doc.Hooks {
		for g, group := range groups {
			for h, handler := range group.Hooks {
				if t, _ := handler["type"].(string); t != "command" {
					continue
				}
				out = append(out, codexHook{event: event, group: g, handler: h, matcher: group.Matcher, fields: handler})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].event < out[j].event })
	return out, nil
}

func (h codexHook) command() string { s, _ := h.fields["command"].(string); return s }

// codexEventLabel is the snake_case name Codex keys an event by
// ("PreToolUse" → "pre_tool_use").
func codexEventLabel(event string) string {
	var b strings.Builder
	for i, r := range event {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// codexHookKey is the key of the hook's [hooks.state."KEY"] table in
// Codex's config.toml: the hooks file's path, the event's label, and the
// positions of the matcher group and of the handler in it.
func codexHookKey(file string, h codexHook) string {
	return fmt.Sprintf("%s:%s:%d:%d", file, codexEventLabel(h.event), h.group, h.handler)
}

// codexHookHash is the hash Codex records as a hook's trusted_hash, as
// Codex 0.169.0 computes it (codex-rs hooks discovery, "hash a normalized,
// config-derived identity"): the object {event_name, matcher, hooks: [the
// normalized handler]} with fields that are absent left out, its keys
// sorted at every level, as compact JSON, SHA-256, "sha256:" and hex. The
// handler is normalized to type, command, timeout (default 600, at
// least 1), async (default false) and statusMessage when it has one.
// this package's testdata holds hooks, config.toml and the hashes the
// real Codex listed for them.
func codexHookHash(h codexHook) string {
	handler := map[string]any{"type": "command", "command": h.command(), "async": false}
	timeout := int64(600)
	for _, k := range []string{"timeout", "timeoutSec"} {
		if n, ok := h.fields[k].(json.Number); ok {
			if v, err := n.Int64(); err == nil {
				timeout = v
			}
			break
		}
	}
	handler["timeout"] = max(timeout, 1)
	if v, ok := h.fields["async"].(bool); ok {
		handler["async"] = v
	}
	if v, ok := h.fields["statusMessage"].(string); ok {
		handler["statusMessage"] = v
	}
	identity := map[string]any{"event_name": codexEventLabel(h.event), "hooks": []any{handler}}
	if h.matcher != nil {
		identity["matcher"] = *h.matcher
	}
	var b bytes.Buffer
	canonicalJSON(&b, identity)
	sum := sha256.Sum256(b.Bytes())
	return "sha256:" + hex.EncodeToString(sum[:])
}

// canonicalJSON writes v as serde_json writes it: compact, object keys
// sorted, strings escaped as serde_json escapes them (only '"', '\\' and
// control characters; \b \f \n \r \t by name, the others as \u00xx).
func canonicalJSON(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			canonicalString(b, k)
			b.WriteByte(':')
			canonicalJSON(b, x[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			canonicalJSON(b, e)
		}
		b.WriteByte(']')
	case string:
		canonicalString(b, x)
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	default:
		b.WriteString("null")
	}
}

func canonicalString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 {
				fmt.Fprintf(b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}

// codexConfig is what doctor reads of Codex's config.toml.
type codexConfig struct {
	Hooks struct {
		State map[string]struct {
			TrustedHash *string `toml:"trusted_hash"`
			Enabled     *bool   `toml:"enabled"`
		} `toml:"state"`
	} `toml:"hooks"`
	Projects map[string]struct {
		TrustLevel string `toml:"trust_level"`
	} `toml:"projects"`
}

// checkCodexTrust checks gyrum's hooks in the Codex hooks file at file
// (project: the project it belongs to, "" for the user's) against the
// trust recorded in codexHome/config.toml.
func checkCodexTrust(in Input, file, codexHome, project string) []Result {
	name := "codex-trust"
	if project != "" {
		name = "codex-trust (project)"
	}
	c := Result{Name: name}
	ours, err := ourCodexHooks(in, file)
	if err != nil {
		c.Detail, c.Fix = err.Error(), "fix the file (Codex cannot read it either), then run gyrum setup --agents codex"
		if errors.Is(err, fs.ErrPermission) {
			c.Fix = "make the file readable by this user"
		}
		return []Result{c}
	}
	if len(ours) == 0 {
		return nil
	}
	config := filepath.Join(codexHome, "config.toml")
	var cfg codexConfig
	if _, err := toml.DecodeFile(config, &cfg); err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.Detail, c.Fix = fmt.Sprintf("cannot read Codex's %s: %v", config, err), "fix the file (Codex cannot read it either)"
		return []Result{c}
	}
	dir := firstNonEmpty(project, in.Cwd, "your project")
	fix := fmt.Sprintf("run `codex` in %s and answer \"Trust all and continue\" when it lists hooks to review (or trust them in /hooks)", dir)
	problems, disabled := codexTrustProblems(cfg, file, ours)
	if disabled {
		fix = "enable the gyrum hooks in codex's /hooks (or remove enabled = false from their [hooks.state] in " + config + ")"
	}
	if project != "" && len(problems) == 0 && !codexProjectTrusted(cfg, project) {
		problems = append(problems, "the project "+project+" is not trusted, so Codex loads none of its .codex files")
		fix = fmt.Sprintf("run `codex` in %s and trust the project when it asks", project)
	}
	if len(problems) > 0 {
		c.Detail = fmt.Sprintf("Codex skips gyrum's hooks in %s without a word: %s (per %s); its tool calls are no evidence of work and its leases show unwired",
			file, strings.Join(problems, "; "), config)
		c.Fix = fix
		return []Result{c}
	}
	c.OK = true
	c.Detail = fmt.Sprintf("Codex trusts gyrum's %d hooks in %s", len(ours), file)
	return []Result{c}
}

// ourCodexHooks returns gyrum's hooks in the Codex hooks file at file:
// none when it does not exist; an error that names the file when it
// cannot be read (fs.ErrPermission among them) or parsed.
func ourCodexHooks(in Input, file string) ([]codexHook, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", file, err)
	}
	hooks, err := codexHooks(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	var ours []codexHook
	for _, h := range hooks {
		if in.IsHookCommand(h.command()) {
			ours = append(ours, h)
		}
	}
	return ours, nil
}

// codexTrustProblems says, per kind, which of gyrum's hooks in file
// Codex's [hooks.state] does not trust, trusted as they were before a
// change, or disables; disabled is true when any is disabled.
func codexTrustProblems(cfg codexConfig, file string, ours []codexHook) (problems []string, disabled bool) {
	var untrusted, changed, off []string
	for _, h := range ours {
		st, ok := cfg.Hooks.State[codexHookKey(file, h)]
		switch {
		case ok && st.Enabled != nil && !*st.Enabled:
			off = append(off, h.event)
		case !ok || st.TrustedHash == nil:
			untrusted = append(untrusted, h.event)
		case *st.TrustedHash != codexHookHash(h):
			changed = append(changed, h.event)
		}
	}
	if len(untrusted) > 0 {
		problems = append(problems, strings.Join(untrusted, ", ")+" not trusted")
	}
	if len(changed) > 0 {
		problems = append(problems, strings.Join(changed, ", ")+" changed since trusted")
	}
	if len(off) > 0 {
		problems = append(problems, strings.Join(off, ", ")+" disabled (enabled = false)")
	}
	return problems, len(off) > 0
}

// codexProjectTrusted reports whether Codex trusts project (its
// [projects."PATH"] trust_level for it or a directory above it).
func codexProjectTrusted(cfg codexConfig, project string) bool {
	for dir := filepath.Clean(project); ; dir = filepath.Dir(dir) {
		if p, ok := cfg.Projects[dir]; ok {
			return p.TrustLevel == "trusted"
		}
		if filepath.Dir(dir) == dir {
			return false
		}
	}
}

// firstNonEmpty returns the first of ss that is not empty.
func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
