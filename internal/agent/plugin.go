package agent

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Plugin is a hook that is a code file of the agent's own (a plugin, an
// extension) rather than a command in a settings file: agents whose hooks
// are functions (opencode, Kilo CLI, pi) load every file of a plugin
// directory, and gyrum setup writes one there that runs gyrum's hook
// command on each tool call's start and end with a Claude Code payload
// (hook_event_name PreToolUse or PostToolUse, tool_name, tool_use_id,
// tool_input, cwd, session_id), and hands the lease-ended notice the hook
// prints to the model in the agent's own way. The file is gyrum's: its
// first line carries PluginMarker, setup rewrites it whole and removes it
// on --uninstall, and a file there without the marker is left alone.
// Hooks.Path (ProjectDir, UserDir, ConfigHomeDir, File) says where it
// goes.
type Plugin struct {
	// Template is the file's text, with PluginPlaceholder (a quoted
	// string literal) where the hook command goes.
	Template string
}

// PluginMarker is on the first line of every plugin file gyrum writes.
const PluginMarker = "gyrum:plugin"

// PluginPlaceholder is the string literal of a Plugin.Template that
// Render replaces with the hook command, as a JSON string (which is a
// JavaScript and TypeScript string literal too).
const PluginPlaceholder = `"__GYRUM_HOOK_COMMAND__"`

// Render returns the plugin file that runs command.
func (p *Plugin) Render(command string) []byte {
	lit, _ := json.Marshal(command) // escapes U+2028/9: a valid JS literal
	return []byte(strings.Replace(p.Template, PluginPlaceholder, string(lit), 1))
}

// Ours reports whether data is a plugin file gyrum wrote (its first line
// carries PluginMarker), whichever version of it, edited or not.
func (p *Plugin) Ours(data []byte) bool {
	first, _, _ := bytes.Cut(data, []byte("\n"))
	return bytes.Contains(first, []byte(PluginMarker))
}

// Command returns the hook command data, a plugin file, runs, and
// whether data is exactly what Render makes of it (current: neither
// edited nor written by another version of gyrum). A file whose command
// cannot be found has ok false and command "".
func (p *Plugin) Command(data []byte) (command string, current, ok bool) {
	before, after, found := strings.Cut(p.Template, PluginPlaceholder)
	if !found {
		return "", false, false
	}
	s := string(data)
	if strings.HasPrefix(s, before) && strings.HasSuffix(s, after) && len(s) >= len(before)+len(after) {
		if err := json.Unmarshal([]byte(s[len(before):len(s)-len(after)]), &command); err == nil {
			return command, true, true
		}
	}
	// Edited, or another version: the command is the string literal on
	// the line that opens as the template's does.
	prefix := before[strings.LastIndexByte(before, '\n')+1:]
	for _, line := range strings.Split(s, "\n") {
		rest, found := strings.CutPrefix(strings.TrimSpace(line), strings.TrimSpace(prefix))
		rest = strings.TrimSpace(rest)
		if !found || !strings.HasPrefix(rest, `"`) {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(rest))
		if dec.Decode(&command) == nil {
			return command, false, true
		}
	}
	return "", false, false
}
