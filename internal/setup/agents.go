package setup

import (
	"github.com/gyrum-labs/warp/internal/warp"
)

// agentTarget returns the settings file and format of one of the other
// agents of Options.Agents.
func agentTarget(o Options, agent string) (hookTarget, error) {
	switch agent {
	default:
		return hookTarget{}, warp.Errorf(warp.ErrInvalid, "--agents: unknown agent %q (want codex, gemini or cursor)", agent)
	}
}
