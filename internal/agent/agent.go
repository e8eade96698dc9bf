// Package agent is what gyrum knows of each agent CLI, one file per agent:
// the names its processes carry, the names its hook events carry, and how
// the hook's output tells it that its lease ended. agentproc (which process
// is the agent) and the hook (which event a payload is, what to print) ask
// this package and name no agent themselves.
//
// An agent gyrum does not know here is still watched truthfully: start-work
// finds it above its tool call's shells (agentproc.Caller).
package agent

import (
	"path/filepath"
	"sort"
	"strings"
)

// Agent is one agent CLI.
type Agent struct {
	// Name is the agent's short name, the one the process walk reports:
	// "claude", "codex", "gemini", "cursor-agent", "aider".
	Name string
	// Product is the agent as people call it ("claude-code"); it labels
	// leases (start-work's default --agent).
	Product string
	// Title is its name in prose ("Claude Code").
	Title string
	// ShellTool is what the agent calls its shell tool, for the
	// instructions setup writes ("Bash"); "" when it has none.
	ShellTool string
	// Instructions is the project instructions file the agent reads
	// ("CLAUDE.md", "AGENTS.md"), where `gyrum setup --instructions=FILE`
	// puts gyrum's snippet; "" when it reads none by itself.
	Instructions string
	// Executables are the base names its processes go by: the kernel's
	// name, argv[0], or the script an interpreter runs.
	Executables []string
	// Packages are fragments of the path of its script when it runs
	// under an interpreter (node …/@openai/codex/bin/codex.js).
	Packages []string
	// PIDEnv names the variable in which the agent hands its own pid to
	// the processes it starts (its tool calls' shells, its hooks):
	// CLAUDE_PID, OPENCODE_PID. start-work watches that process and the
	// hook credits its leases; "" when it hands down none (the ancestor
	// walk finds it).
	PIDEnv string
	// Events maps the names its hooks give the tool events to Claude
	// Code's (PreToolUse, PostToolUse, PostToolUseFailure), for an agent
	// that names them otherwise. The hook's record and output keep the
	// agent's own name.
	Events map[string]string
	// Notice is how the hook's output reaches the agent's model.
	Notice Notice
	// Hooks is how gyrum setup wires the hook into the agent's settings;
	// nil when it cannot.
	Hooks *Hooks
	// Server, when set, is how the agent runs sessions' tool calls in a
	// shared server process of its own (Codex's app-server daemon): such a
	// process outlives the session whose call runs under it and keeps the
	// environment of whoever started it, so start-work watches its one
	// connected client instead.
	Server *Server
}

// Server describes an agent's shared server.
type Server struct {
	// Is reports whether a process of the agent with command line args
	// is the shared server, and whether it listens for remote clients
	// (whose sessions cannot be told apart).
	Is func(args []string) (server, remote bool)
	// Name names it in messages ("the Codex app-server daemon").
	Name string
	// Avoid says how to run the agent without it, for a refusal.
	Avoid string
}

// Hooks describes an agent's hook settings file as gyrum setup edits it.
type Hooks struct {
	// Flag is the agent's name in `gyrum setup --agents`; "" for Claude
	// Code, which setup always wires.
	Flag string
	// Events are the events gyrum's hook is wired to.
	Events []string
	// Grouped: an event's handlers are in matcher groups ({"matcher": M,
	// "hooks": [...]}), ours in a group whose matcher is Matcher; else
	// they are the event's array itself.
	Grouped bool
	Matcher string
	// Our handler's fields, in this order: "name" (when Name is set),
	// "type": "command" (when Typed), "command", and "timeout" in units of
	// 1/TimeoutScale second.
	Name         string
	Typed        bool
	TimeoutScale int
	// Version, when set, is a top-level "version" the file must carry.
	Version int
	// The file: <project>/ProjectDir/File with --project, else
	// $HomeEnv/File when HomeEnv is set in the environment, else
	// $HOME/UserDir/File.
	ProjectDir, UserDir, HomeEnv, File string
	// DisableKey, when set, is the boolean a settings file sets to make
	// the agent run no hook at all ("disableAllHooks"); the file of
	// highest precedence that sets it decides. ManagedOnlyKey, when set,
	// is the boolean of a managed settings file that makes the agent run
	// only the managed file's own hooks ("allowManagedHooksOnly").
	DisableKey, ManagedOnlyKey string
	// Managed are, by GOOS, the administrator's settings files, which win
	// over every other.
	Managed map[string][]string
	// Layers are the files under a project's ProjectDir the agent reads
	// on top of the user's File, lowest precedence first (Claude Code:
	// settings.json, settings.local.json); doctor looks for the hook in
	// all of them. Empty: File alone.
	Layers []string
	// Notes, when set, says what the user must still do for the hook to
	// run after setup wrote the file (trust it, turn hooks on).
	Notes func(NoteInput) []string
	// Announce: the hook cannot tell the agent from its payload (GitHub
	// Copilot CLI sends Claude Code's event names but reads another
	// output), so setup writes `--agent Flag` after the hook command and
	// the hook answers in the agent's Notice shape.
	Announce bool
	// Plugin, when set, makes the file a plugin of gyrum's own, written
	// whole (see Plugin), not a settings file gyrum's hook entries are
	// merged into: the format fields above (Events, Grouped, ...) are then
	// unused, and File is the plugin's path under the directories above
	// (opencode: "gyrum.js" in .opencode/plugins; pi: "extensions/gyrum.ts"
	// in .pi).
	Plugin *Plugin
	// ConfigHomeDir, when set, is where the user's file is under
	// $XDG_CONFIG_HOME when that is set (opencode: "opencode/plugins"),
	// instead of $HOME/UserDir.
	ConfigHomeDir string
}

// NoteInput is what Hooks.Notes looks at.
type NoteInput struct {
	Path    string
	Data    []byte // the file as it will be after setup
	Changed bool   // whether setup changes it
	Project string // --project's directory, "" for the user's settings
	// IsHookCommand recognises a command that runs gyrum's hook.
	IsHookCommand func(string) bool
}

// Path returns the settings file gyrum setup edits: <project>/ProjectDir/
// File when project is set, else $HomeEnv/File when getenv has it, else
// $XDG_CONFIG_HOME/ConfigHomeDir/File when both are set, else
// <home>/UserDir/File.
func (h *Hooks) Path(project, home string, getenv func(string) string) string {
	switch {
	case project != "":
		return filepath.Join(project, h.ProjectDir, h.File)
	case h.HomeEnv != "" && getenv != nil && getenv(h.HomeEnv) != "":
		return filepath.Join(getenv(h.HomeEnv), h.File)
	case h.ConfigHomeDir != "" && getenv != nil && filepath.IsAbs(getenv("XDG_CONFIG_HOME")):
		return filepath.Join(getenv("XDG_CONFIG_HOME"), h.ConfigHomeDir, h.File)
	}
	return filepath.Join(home, h.UserDir, h.File)
}

// Files returns the settings files that apply in project dir cwd, lowest
// precedence first: the user's (Path with no project), then each of
// Layers under cwd/ProjectDir (File alone when Layers is empty). cwd ""
// gives the user's alone.
func (h *Hooks) Files(cwd, home string, getenv func(string) string) []string {
	files := []string{h.Path("", home, getenv)}
	if cwd == "" {
		return files
	}
	layers := h.Layers
	if len(layers) == 0 {
		layers = []string{h.File}
	}
	for _, f := range layers {
		files = append(files, filepath.Join(cwd, h.ProjectDir, f))
	}
	return files
}

// Default returns the agent gyrum setup always wires, whose hook doctor
// checks and runs: Claude Code, whose hook contract the others' payloads
// are mapped to (Hooks.Flag "").
func Default() Agent {
	for _, a := range all {
		if a.Hooks != nil && a.Hooks.Flag == "" {
			return a
		}
	}
	panic("agent: no agent is wired by default")
}

// InstructionFiles returns each instructions file some agent reads, in the
// order of the agents, with the titles of the agents that read it.
func InstructionFiles() (files []string, readers map[string][]string) {
	readers = map[string][]string{}
	for _, a := range all {
		if a.Instructions == "" {
			continue
		}
		if _, ok := readers[a.Instructions]; !ok {
			files = append(files, a.Instructions)
		}
		readers[a.Instructions] = append(readers[a.Instructions], a.Title)
	}
	return files, readers
}

// Wired returns the agents `gyrum setup --agents` can wire, by their
// flag names' order.
func Wired() []Agent {
	var out []Agent
	for _, a := range all {
		if a.Hooks != nil && a.Hooks.Flag != "" {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Hooks.Flag < out[j].Hooks.Flag })
	return out
}

// ByFlag returns the agent whose `gyrum setup --agents` name is flag.
func ByFlag(flag string) (Agent, bool) {
	for _, a := range Wired() {
		if a.Hooks.Flag == flag {
			return a, true
		}
	}
	return Agent{}, false
}

// Notice is a shape of the hook output that tells an agent its lease
// ended.
type Notice int

// The notice shapes.
const (
	// NoticeHookSpecific is Claude Code's
	// {"hookSpecificOutput":{"hookEventName":E,"additionalContext":TEXT}},
	// which Codex and Gemini CLI read too.
	NoticeHookSpecific Notice = iota
	// NoticeTopLevel is {"additional_context":TEXT} (Cursor).
	NoticeTopLevel
	// NoticeAdditionalContext is {"additionalContext":TEXT} (GitHub
	// Copilot CLI).
	NoticeAdditionalContext
)

// all lists the agents, one file each.
var all = []Agent{claudeCode, codex, geminiCLI, cursor, aider, opencode, kilo, pi, qwenCode, copilotCLI}

// All returns every agent gyrum knows.
func All() []Agent { return append([]Agent(nil), all...) }

// Names returns the agents' names, sorted.
func Names() []string {
	var out []string
	for _, a := range all {
		out = append(out, a.Name)
	}
	sort.Strings(out)
	return out
}

// byExecutable maps every executable name to its agent.
var byExecutable = func() map[string]Agent {
	m := map[string]Agent{}
	for _, a := range all {
		for _, e := range a.Executables {
			m[e] = a
		}
	}
	return m
}()

// ByExecutable returns the agent whose process goes by the base name name.
func ByExecutable(name string) (Agent, bool) {
	a, ok := byExecutable[name]
	return a, ok
}

// ByName returns the agent named name (Agent.Name).
func ByName(name string) (Agent, bool) {
	for _, a := range all {
		if a.Name == name {
			return a, true
		}
	}
	return Agent{}, false
}

// ByPackage returns the agent whose script path contains one of its
// Packages (slash-separated).
func ByPackage(script string) (Agent, bool) {
	for _, a := range all {
		for _, p := range a.Packages {
			if strings.Contains(script, p) {
				return a, true
			}
		}
	}
	return Agent{}, false
}

// PIDEnvs returns the variables agents hand their pids down in
// (Agent.PIDEnv), in the agents' order.
func PIDEnvs() []string {
	var out []string
	for _, a := range all {
		if a.PIDEnv != "" {
			out = append(out, a.PIDEnv)
		}
	}
	return out
}

// ByPIDEnv returns the agent that hands its pid down in variable k.
func ByPIDEnv(k string) (Agent, bool) {
	for _, a := range all {
		if a.PIDEnv != "" && a.PIDEnv == k {
			return a, true
		}
	}
	return Agent{}, false
}

// Product returns the product an agent name or executable name is, as
// people call it; "agent" for one gyrum does not know.
func Product(name string) string {
	if a, ok := ByName(name); ok {
		return a.Product
	}
	if a, ok := ByExecutable(name); ok {
		return a.Product
	}
	return "agent"
}

// events maps every agent's own event name to Claude Code's name and the
// notice shape of the agent that sends it.
var events = func() map[string]struct {
	canonical string
	notice    Notice
} {
	m := map[string]struct {
		canonical string
		notice    Notice
	}{}
	for _, a := range all {
		for own, canonical := range a.Events {
			m[own] = struct {
				canonical string
				notice    Notice
			}{canonical, a.Notice}
		}
	}
	return m
}()

// Canonical returns Claude Code's name of a hook event an agent sent
// (event itself when it is Claude Code's, or unknown).
func Canonical(event string) string {
	if e, ok := events[event]; ok {
		return e.canonical
	}
	return event
}

// NoticeFor returns the notice shape for an output to event: that of the
// agent that names its events so, Claude Code's by default.
func NoticeFor(event string) Notice {
	if e, ok := events[event]; ok {
		return e.notice
	}
	return NoticeHookSpecific
}
