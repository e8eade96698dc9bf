// Package trust checks, for each agent CLI whose settings hold gyrum's
// hook, that the agent will run it: an agent that skips an untrusted hook
// without a word (Codex's per-hook trust, Gemini CLI's trusted folders)
// leaves every lease of it unwired. gyrum doctor runs these checks. They
// only read: gyrum never writes another program's trust. Each agent's
// check sits in its own file beside its data in package agent; it is kept
// out of package agent so the hook, which needs that data, does not link
// the readers of the agents' config files.
package trust

// Input is what the checks look at.
type Input struct {
	Home string // the user's home directory
	// Getenv reads the variables that move an agent's files
	// ($CODEX_HOME); nil reads none.
	Getenv func(string) string
	// Cwd is the project doctor runs in; "" checks the user's files only.
	Cwd string
	// IsHookCommand recognises a command that runs gyrum's hook.
	IsHookCommand func(string) bool
}

func (in Input) getenv(k string) string {
	if in.Getenv == nil {
		return ""
	}
	return in.Getenv(k)
}

// Result is one check: OK, or what is wrong (Detail) and how to fix it.
type Result struct {
	Name   string
	OK     bool
	Detail string
	Fix    string
}

// checks are the agents' trust checks, by agent (package agent's names).
var checks = []func(Input) []Result{codex, gemini, qwen, copilot}

// Check runs every agent's trust check. An agent whose files hold no hook
// of gyrum's gets no result.
func Check(in Input) []Result {
	var out []Result
	for _, c := range checks {
		out = append(out, c(in)...)
	}
	return out
}
