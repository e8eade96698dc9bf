package setup

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzClaudeSettings: any settings.json content either is refused with a
// ParseError or gets our hooks merged into valid JSON that keeps every
// top-level key, installs idempotently and uninstalls to no hook of ours;
// install and uninstall change no byte outside "hooks", and a file without
// "hooks" comes back from them byte for byte (checkSplice).
func FuzzClaudeSettings(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"hooks":{}}`, `{"model":"x","hooks":{"PostToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"other"}]}]}}`,
		`{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[]}]}}`, `[1,2]`, `{"hooks":[]}`, `{"a":1,}`, `{"disableAllHooks":true}`, "{\"x\":\"\\u0000\"}"} {
		f.Add([]byte(s))
	}
	addSpliceSeeds(f)
	const cmd = "/usr/local/bin/gyrum touch-activity"
	format := defaultFormat()
	f.Fuzz(func(t *testing.T, data []byte) {
		out, _, err := format.install("settings.json", data, cmd)
		if err != nil {
			if _, ok := err.(*ParseError); !ok {
				t.Fatalf("install error %T %v is not a ParseError", err, err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("install of %q produced invalid JSON %q", data, out)
		}
		var before, after map[string]json.RawMessage
		if json.Unmarshal(data, &before) == nil {
			if err := json.Unmarshal(out, &after); err != nil {
				t.Fatalf("output is not an object: %q", out)
			}
			for k := range before {
				if _, ok := after[k]; !ok {
					t.Fatalf("key %q lost: %q -> %q", k, data, out)
				}
			}
		}
		again, changed, err := format.install("settings.json", out, cmd)
		if err != nil || changed {
			t.Fatalf("second install: changed %v err %v\n%q\n%q", changed, err, out, again)
		}
		cmds, err := format.commands("settings.json", out)
		if err != nil || len(cmds) != len(HookEvents()) {
			t.Fatalf("commands after install: %v %v", cmds, err)
		}
		removed, _, err := format.uninstall("settings.json", out)
		if err != nil {
			t.Fatalf("uninstall: %v", err)
		}
		if cmds, err := format.commands("settings.json", removed); err != nil || len(cmds) != 0 {
			t.Fatalf("commands after uninstall: %v %v", cmds, err)
		}
		checkSplice(t, format, data, out, removed)
	})
}

// addSpliceSeeds adds settings files written in unusual layouts.
func addSpliceSeeds(f *testing.F) {
	for _, s := range []string{unusual, "{\n\t\"a\": 1\n}", "{\r\n  \"a\": [1e400]\r\n}\r\n", " { } ", `{"a":{},"b":[],"hooks":{"E":[]}}`,
		"{\n    \"hooks\": {\"PostToolUse\": [{\"matcher\": \"*\", \"hooks\": [{\"command\": \"/x/gyrum touch-activity\"}]}]},\n    \"b\": 2\n}\n",
		`{"version":1,"hooks":{"postToolUse":[{"command":"a"} , {"command":"gyrum touch-activity"}]}}`,
		`{"hooks":{"BeforeTool":[{"matcher":".*","hooks":[{"name":"gyrum-touch-activity","command":"gyrum touch-activity","timeout":5}]}]},"hooks":{}}`} {
		f.Add([]byte(s))
	}
}

// FuzzHookFormats: the installer of every agent's format refuses a file
// with a ParseError or merges our hook into valid JSON, idempotently,
// uninstalls it again, and changes no byte outside "hooks" (and the
// header it adds) on the way (checkSplice).
func FuzzHookFormats(f *testing.F) {
	for _, s := range []string{``, `{}`, `[1]`, `{"hooks":1}`, `{"hooks":{"postToolUse":{}}}`} {
		f.Add([]byte(s))
	}
	addSpliceSeeds(f)
	const cmd = "/usr/local/bin/gyrum touch-activity"
	formats := allFormats()
	f.Fuzz(func(t *testing.T, data []byte) {
		for name, format := range formats {
			out, _, err := format.install("hooks.json", data, cmd)
			if err != nil {
				if _, ok := err.(*ParseError); !ok {
					t.Fatalf("%s: install error %T %v is not a ParseError", name, err, err)
				}
				continue
			}
			if !json.Valid(out) {
				t.Fatalf("%s: install of %q produced invalid JSON %q", name, data, out)
			}
			if again, changed, err := format.install("hooks.json", out, cmd); err != nil || changed || !bytes.Equal(again, out) {
				t.Fatalf("%s: second install: changed %v err %v\n%q", name, changed, err, out)
			}
			cmds, err := format.commands("hooks.json", out)
			if err != nil || len(cmds) != len(format.events) {
				t.Fatalf("%s: commands after install: %v %v\n%q", name, cmds, err, out)
			}
			removed, _, err := format.uninstall("hooks.json", out)
			if err != nil {
				t.Fatalf("%s: uninstall: %v", name, err)
			}
			if cmds, err := format.commands("hooks.json", removed); err != nil || len(cmds) != 0 {
				t.Fatalf("%s: commands after uninstall: %v %v", name, cmds, err)
			}
			checkSplice(t, format, data, out, removed)
		}
	})
}
