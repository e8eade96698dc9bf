// Package copilot holds end-to-end tests that drive the real GitHub
// Copilot CLI (its agenttest.Agent: copilot_test.go) offline against
// agenttest's scripted fake of the OpenAI chat completions API as its
// BYOK provider, with gyrum's hook wired by the real `gyrum setup
// --agents copilot` into the user's ~/.copilot/hooks/gyrum.json and a
// real warp on scaled timings. The tests are in package copilot_test;
// docs/agents/copilot-cli.md records what they measured.
//
// Run them with the pinned CLI installed:
//
//	export GYRUM_TEST_COPILOT=$(.ci/install-copilot)
//	go test ./internal/e2e/copilot/ -v
//
// Without a CLI they skip, unless CI is set: then they fail.
package copilot
