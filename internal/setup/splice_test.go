package setup

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/agent"
)

// allFormats are the hook formats of every agent setup wires.
func allFormats() map[string]hookFormat {
	m := map[string]hookFormat{"claude": defaultFormat()}
	for _, a := range agent.Wired() {
		if a.Hooks.Plugin != nil {
			continue // a file of gyrum's own, not a format (plugin_test.go)
		}
		m[a.Hooks.Flag] = formatOf(a.Hooks)
	}
	return m
}

// oneEvent is a grouped format with a single event, so the expected
// outputs of the layout tests stay short.
var oneEvent = hookFormat{events: []string{"E"}, grouped: true, matcher: "*", typed: true, timeoutScale: 1}

const spliceCmd = "/g/gyrum touch-activity"

// cutMembers returns data without its top-level members named keys, each
// cut with one separator next to it (the one after it, or the one before
// the last), so the rest is left as it was: what install and uninstall
// must leave byte for byte.
func cutMembers(t *testing.T, data []byte, keys ...string) []byte {
	t.Helper()
	for {
		doc, err := parseDocument("x", data)
		if err != nil {
			t.Fatalf("cutMembers: %v\n%q", err, data)
		}
		if !doc.isObj || !doc.fromSource() {
			return data
		}
		o := doc.orig
		i := slices.IndexFunc(o, func(c child) bool { return slices.Contains(keys, c.key) })
		if i < 0 {
			return data
		}
		var from, to int
		switch {
		case len(o) == 1:
			from, to = o[i].keyOff, o[i].val.end
		case i < len(o)-1:
			from, to = o[i].keyOff, o[i+1].keyOff
		default:
			from, to = o[i-1].val.end, o[i].val.end
		}
		data = append(append([]byte(nil), data[:from]...), data[to:]...)
	}
}

// checkSplice checks what install (data → out) and uninstall (out →
// removed) of f may change: only the "hooks" member and the header members
// install added; every other byte is the one of data. A file without
// "hooks" (and with f's header) comes back from install + uninstall byte
// for byte — unless its top-level object is empty: there is no layout to
// keep then, and install writes it anew (so "{ }" comes back as "{}").
func checkSplice(t *testing.T, f hookFormat, data, out, removed []byte) {
	t.Helper()
	doc, err := parseDocument("x", data)
	if err != nil || !doc.isObj || len(doc.orig) == 0 {
		return
	}
	if !json.Valid(removed) {
		t.Fatalf("uninstall produced invalid JSON:\n%q", removed)
	}
	cut := []string{"hooks"}
	hasHeader := true
	for _, m := range f.header {
		if v, _ := doc.get(m.key); v == nil {
			cut = append(cut, m.key)
			hasHeader = false
		}
	}
	if got, want := cutMembers(t, out, cut...), cutMembers(t, data, "hooks"); !bytes.Equal(got, want) {
		t.Fatalf("install changed bytes outside \"hooks\":\ndata %q\nout  %q\ncut  %q\nwant %q", data, out, got, want)
	}
	if rd, err := parseDocument("x", removed); err == nil && rd.isObj && len(rd.obj) > 0 {
		if got, want := cutMembers(t, removed, "hooks"), cutMembers(t, out, "hooks"); !bytes.Equal(got, want) {
			t.Fatalf("uninstall changed bytes outside \"hooks\":\nout     %q\nremoved %q", out, removed)
		}
	}
	if _, i := doc.get("hooks"); i < 0 && hasHeader && !bytes.Equal(removed, data) {
		t.Fatalf("install + uninstall of a file without hooks changed it:\ndata    %q\nremoved %q", data, removed)
	}
}

// installUninstall runs install then uninstall of f on data.
func installUninstall(t *testing.T, f hookFormat, data []byte) (out, removed []byte) {
	t.Helper()
	out, _, err := f.install("x.json", data, spliceCmd)
	if err != nil {
		t.Fatalf("install: %v", err)
	}
	if !json.Valid(out) {
		t.Fatalf("install produced invalid JSON:\n%s", out)
	}
	if again, changed, err := f.install("x.json", out, spliceCmd); err != nil || changed || !bytes.Equal(again, out) {
		t.Fatalf("second install: changed %v, err %v", changed, err)
	}
	removed, _, err = f.uninstall("x.json", out)
	if err != nil {
		t.Fatalf("uninstall: %v", err)
	}
	if cmds, err := f.commands("x.json", removed); err != nil || len(cmds) != 0 {
		t.Fatalf("commands after uninstall: %v %v", cmds, err)
	}
	return out, removed
}

// unusual is a valid settings file written the way no tool writes one:
// tabs, members on one line and members on several, odd spacing around
// ':' and ',', escapes, numbers no float64 holds, a trailing space and no
// final newline. The user's own hooks (Stop, a Bash matcher group) are as
// oddly written.
const unusual = "  {\n" +
	"\t\"$schema\":\"https://json.schemastore.org/claude-code-settings.json\",\n" +
	"\t\"permissions\" : { \"allow\" : [ \"Bash(npm run lint)\" ,\"Read(~/.zshrc)\" ], \"deny\":[] },\n" +
	"\t\"env\": {\"NOTE\": \"caf\\u00e9 \\u2603 \\ud83d\\ude00 \\/ \\\"q\\\" <&> \\u0000\", \"BIG\": 12345678901234567890},\n" +
	"\t\"limits\": [1e400, -0.0, 1.50E+3, 0, -1E-400, true, null],\n" +
	"\n" +
	"\t\t\"odd\"   :    true ,\n" +
	"\t\"hooks\": {\n" +
	"\t\t\"Stop\": [ {\"hooks\": [ {\"type\":\"command\",\"command\":\"notify-send done\"} ]} ],\n" +
	"\t\t\"PostToolUse\": [\n" +
	"\t\t\t{ \"matcher\": \"Bash\", \"hooks\": [ { \"type\": \"command\", \"command\": \"lint.sh\" } ] }\n" +
	"\t\t],\n" +
	"\t\t\"postToolUse\" :[{\"command\":\"./audit.sh\"}],\n" +
	"\t\t\"AfterTool\": [{\"matcher\": \"write_file\", \"hooks\": [{\"name\": \"fmt\", \"type\": \"command\", \"command\": \"fmt.sh\", \"timeout\": 1e3}]}]\n" +
	"\t},\n" +
	"\t\"model\":\"opus\" } "

// Install and uninstall of every format leave every byte of a settings
// file outside "hooks" as it was, and the user's own hooks inside it too;
// a file with only the user's hooks comes back byte for byte.
func TestSpliceKeepsUnusualFormatting(t *testing.T) {
	data := []byte(unusual)
	if !json.Valid(data) {
		t.Fatal("the test file is not valid JSON")
	}
	theirs := []string{
		`"Stop": [ {"hooks": [ {"type":"command","command":"notify-send done"} ]} ]`,
		`{ "matcher": "Bash", "hooks": [ { "type": "command", "command": "lint.sh" } ] }`,
		`{"command":"./audit.sh"}`,
		`{"matcher": "write_file", "hooks": [{"name": "fmt", "type": "command", "command": "fmt.sh", "timeout": 1e3}]}`,
	}
	for name, f := range allFormats() {
		t.Run(name, func(t *testing.T) {
			out, removed := installUninstall(t, f, data)
			checkSplice(t, f, data, out, removed)
			for _, s := range theirs {
				if !bytes.Contains(out, []byte(s)) {
					t.Errorf("install rewrote %s:\n%s", s, out)
				}
			}
			// What install adds is indented with tabs, as the file is, one
			// level deeper than the line it goes into.
			if !bytes.Contains(out, []byte("\n\t\t\t\t\"command\": \""+spliceCmd+"\"")) &&
				!bytes.Contains(out, []byte("\n\t\t\t\t\t\t\"command\": \""+spliceCmd+"\"")) {
				t.Errorf("the added hook is not indented with tabs:\n%s", out)
			}
			for _, l := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(l, " ") && l != "  {" {
					t.Errorf("a line indented with spaces: %q", l)
				}
			}
			want := data
			if len(f.header) > 0 {
				// "version" (Cursor, Copilot) stays: uninstall keeps header members.
				want = []byte(strings.Replace(unusual, "{\n", "{\n\t\"version\": 1,\n", 1))
			}
			if !bytes.Equal(removed, want) {
				t.Errorf("install + uninstall changed the file:\ngot:\n%s\nwant:\n%s", removed, want)
			}
		})
	}
}

// Files without hooks, however written, come back from install +
// uninstall byte for byte, in every format.
func TestSpliceRestoresFileWithoutHooks(t *testing.T) {
	files := []string{
		"{\n  \"model\": \"opus\"\n}\n",
		"{\n\t\"model\": \"opus\",\n\t\"env\": {\"A\": \"\\u00e9\"}\n}\n",
		"{\n    \"model\": \"opus\",\n\n    \"n\": 12345678901234567890\n}",
		`{"model":"opus","limits":[1e400,-0.0]}`,
		"{\"model\": \"opus\"}\n\n\n",
		"\n\n  {  \"model\" :\"opus\" ,  \"x\":{} ,\"y\" :[ ]  }  \n",
		"{\r\n  \"model\": \"opus\",\r\n  \"env\": {\r\n    \"A\": \"1\"\r\n  }\r\n}\r\n",
		"{\"model\": \"opus\", \"model\": \"sonnet\"}",
		"{}",
		"{}\n",
	}
	for name, f := range allFormats() {
		for _, s := range files {
			if len(f.header) > 0 {
				// Install adds "version" and uninstall keeps it: start
				// with it, for a file install + uninstall restores.
				s = strings.Replace(s, "{", `{"version": 1, `, 1)
				s = strings.Replace(s, `{"version": 1, }`, `{"version": 1}`, 1)
			}
			data := []byte(s)
			out, removed := installUninstall(t, f, data)
			checkSplice(t, f, data, out, removed)
			if !bytes.Equal(removed, data) {
				t.Errorf("%s: install + uninstall of %q gave %q", name, data, removed)
			}
		}
	}
	// The one exception: an empty top-level object shows no layout to
	// follow, so install writes the document anew, and uninstall, which
	// leaves the object empty again, writes it "{}": the whitespace
	// that was inside it is not known any more.
	_, removed := installUninstall(t, defaultFormat(), []byte("{ \n }\n"))
	if string(removed) != "{}\n" {
		t.Errorf("install + uninstall of an empty object with spaces gave %q, want %q", removed, "{}\n")
	}
}

// What install writes follows the file's layout: its indentation, its
// key-value and one-line separators, its line breaks, and the layout of
// the container it goes into.
func TestSpliceLayout(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{
			"tabs",
			"{\n\t\"model\": \"opus\"\n}\n",
			"{\n\t\"model\": \"opus\",\n\t\"hooks\": {\n\t\t\"E\": [\n\t\t\t{\n\t\t\t\t\"matcher\": \"*\",\n\t\t\t\t\"hooks\": [\n\t\t\t\t\t{\n" +
				"\t\t\t\t\t\t\"type\": \"command\",\n\t\t\t\t\t\t\"command\": \"/g/gyrum touch-activity\",\n\t\t\t\t\t\t\"timeout\": 5\n" +
				"\t\t\t\t\t}\n\t\t\t\t]\n\t\t\t}\n\t\t]\n\t}\n}\n",
		},
		{
			"four spaces",
			`{
    "a": [1, 2],
    "b": "\u00e9"
}`,
			`{
    "a": [1, 2],
    "b": "\u00e9",
    "hooks": {
        "E": [
            {
                "matcher": "*",
                "hooks": [
                    {
                        "type": "command",
                        "command": "/g/gyrum touch-activity",
                        "timeout": 5
                    }
                ]
            }
        ]
    }
}`,
		},
		{
			"an array on one line gets our group on that line",
			`{
    "hooks": {
        "E": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint.sh"}]}]
    },
    "n": 1e400
}
`,
			`{
    "hooks": {
        "E": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint.sh"}]}, {"matcher": "*", "hooks": [{"type": "command", "command": "/g/gyrum touch-activity", "timeout": 5}]}]
    },
    "n": 1e400
}
`,
		},
		{
			"minified",
			`{"model":"opus","n":12345678901234567890}`,
			`{"model":"opus","n":12345678901234567890,"hooks":{"E":[{"matcher":"*","hooks":[{"type":"command","command":"/g/gyrum touch-activity","timeout":5}]}]}}`,
		},
		{
			"spaces around the colon",
			"{\n  \"a\" : 1,\n  \"hooks\" : {}\n}\n",
			"{\n  \"a\" : 1,\n  \"hooks\" : {\n    \"E\" : [\n      {\n        \"matcher\" : \"*\",\n        \"hooks\" : [\n          {\n" +
				"            \"type\" : \"command\",\n            \"command\" : \"/g/gyrum touch-activity\",\n            \"timeout\" : 5\n" +
				"          }\n        ]\n      }\n    ]\n  }\n}\n",
		},
		{
			"CRLF",
			"{\r\n  \"model\": \"opus\"\r\n}\r\n",
			"{\r\n  \"model\": \"opus\",\r\n  \"hooks\": {\r\n    \"E\": [\r\n      {\r\n        \"matcher\": \"*\",\r\n        \"hooks\": [\r\n          {\r\n" +
				"            \"type\": \"command\",\r\n            \"command\": \"/g/gyrum touch-activity\",\r\n            \"timeout\": 5\r\n" +
				"          }\r\n        ]\r\n      }\r\n    ]\r\n  }\r\n}\r\n",
		},
		{
			"an old path is replaced in place, and nothing else",
			`{ "hooks" : { "E" : [ { "hooks" : [ { "command" : "/old/gyrum touch-activity" , "type" : "command" , "timeout" : 5 } ] , "matcher" : "*" } ] } }`,
			`{ "hooks" : { "E" : [ { "hooks" : [ { "command" : "/g/gyrum touch-activity" , "type" : "command" , "timeout" : 5 } ] , "matcher" : "*" } ] } }`,
		},
		{
			"a member added to our hook goes after its last one",
			"{\"hooks\": {\"E\": [{\"matcher\": \"*\", \"hooks\": [\n\t{\n\t\t\"command\": \"gyrum touch-activity\"\n\t}\n]}]}}",
			"{\"hooks\": {\"E\": [{\"matcher\": \"*\", \"hooks\": [\n\t{\n\t\t\"command\": \"/g/gyrum touch-activity\",\n\t\t\"type\": \"command\",\n\t\t\"timeout\": 5\n\t}\n]}]}}",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, changed, err := oneEvent.install("x.json", []byte(tc.in), spliceCmd)
			if err != nil || !changed {
				t.Fatalf("install: changed %v, err %v", changed, err)
			}
			if string(out) != tc.want {
				t.Errorf("install gave\n%s\nwant\n%s\n(%q)", out, tc.want, out)
			}
		})
	}
}

// Uninstall removes our entries with the separator that went with them,
// and leaves the rest of the lists they were in as written.
func TestSpliceUninstallLayout(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{
			"the last group",
			"{\n\t\"hooks\": {\n\t\t\"E\": [\n\t\t\t{\"matcher\": \"Bash\", \"hooks\": [{\"command\": \"lint.sh\"}]},\n\t\t\t{\"matcher\": \"*\", \"hooks\": [{\"command\": \"/g/gyrum touch-activity\"}]}\n\t\t]\n\t},\n\t\"x\": 1\n}",
			"{\n\t\"hooks\": {\n\t\t\"E\": [\n\t\t\t{\"matcher\": \"Bash\", \"hooks\": [{\"command\": \"lint.sh\"}]}\n\t\t]\n\t},\n\t\"x\": 1\n}",
		},
		{
			"the first group",
			"{\n\t\"hooks\": {\n\t\t\"E\": [\n\t\t\t{\"matcher\": \"*\", \"hooks\": [{\"command\": \"/g/gyrum touch-activity\"}]},\n\t\t\t{\"matcher\": \"Bash\", \"hooks\": [{\"command\": \"lint.sh\"}]}\n\t\t]\n\t}\n}",
			"{\n\t\"hooks\": {\n\t\t\"E\": [\n\t\t\t{\"matcher\": \"Bash\", \"hooks\": [{\"command\": \"lint.sh\"}]}\n\t\t]\n\t}\n}",
		},
		{
			"a hook between two others, on one line",
			`{"hooks":{"E":[{"matcher":"*","hooks":[{"command":"a"} , {"command":"gyrum touch-activity"} , {"command":"b"}]}]}}`,
			`{"hooks":{"E":[{"matcher":"*","hooks":[{"command":"a"} , {"command":"b"}]}]}}`,
		},
		{
			"the only event, and with it the hooks object",
			"{\n    \"a\": 1,\n    \"hooks\": {\"E\": [{\"matcher\": \"*\", \"hooks\": [{\"command\": \"gyrum touch-activity\"}]}]},\n    \"b\": 2\n}\n",
			"{\n    \"a\": 1,\n    \"b\": 2\n}\n",
		},
		{
			"everything",
			"\n{\"hooks\": {\"E\": [{\"matcher\": \"*\", \"hooks\": [{\"command\": \"gyrum touch-activity\"}]}]}}\n\n",
			"\n{}\n\n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, changed, err := oneEvent.uninstall("x.json", []byte(tc.in))
			if err != nil || !changed {
				t.Fatalf("uninstall: changed %v, err %v", changed, err)
			}
			if string(out) != tc.want {
				t.Errorf("uninstall gave\n%s\nwant\n%s\n(%q)", out, tc.want, out)
			}
		})
	}
}

// The parser records where each value, key and container ends, so the
// source bytes of every pristine value are that value.
func TestParseRecordsSpans(t *testing.T) {
	data := []byte(unusual)
	doc, err := parseDocument("x", data)
	if err != nil {
		t.Fatal(err)
	}
	var walk func(n *node)
	walk = func(n *node) {
		raw := data[n.offset:n.end]
		if !json.Valid(raw) {
			t.Errorf("span %d:%d is not a value: %q", n.offset, n.end, raw)
		}
		if !n.pristine() {
			t.Errorf("a value just parsed is not pristine: %q", raw)
		}
		for _, c := range n.orig {
			if c.keyOff >= 0 {
				var k string
				if err := json.Unmarshal(data[c.keyOff:c.keyEnd], &k); err != nil || k != c.key {
					t.Errorf("key span %q is not the key %q", data[c.keyOff:c.keyEnd], c.key)
				}
			}
			walk(c.val)
		}
	}
	walk(doc)
	if got := spliceDocument(data, doc); !bytes.Equal(got, data) {
		t.Errorf("an unedited document is not written back as it was:\n%q", got)
	}
}
