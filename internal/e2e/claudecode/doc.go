// Package claudecode holds end-to-end tests that drive the real Claude Code
// CLI (its agenttest.Agent: claude_test.go) against agenttest's scripted
// fake of the Anthropic Messages API, with gyrum's hook wired by the real
// `gyrum setup` and a real warp. The tests are in package claudecode_test;
// docs/agents/claude-code.md records what they measured.
//
// Run them with the pinned CLI installed:
//
//	export GYRUM_TEST_CLAUDE=$(.ci/install-claude)
//	go test ./internal/e2e/claudecode/ -v
//
// Without a CLI they skip, unless CI is set: then they fail.
package claudecode
