// Package gemini holds end-to-end tests that drive the real Gemini CLI
// (its agenttest.Agent: gemini_test.go) against agenttest's scripted fake
// of the Gemini API, with
// gyrum's hook wired by the real `gyrum setup --agents gemini`, the project
// trusted as a user trusts it, and a real warp on scaled timings. The tests
// are in package gemini_test; docs/agents/gemini-cli.md records what they
// measured.
//
// Run them with the pinned CLI installed:
//
//	export GYRUM_TEST_GEMINI=$(.ci/install-gemini)
//	go test ./internal/e2e/gemini/ -v
//
// Without a CLI they skip, unless CI is set: then they fail.
package gemini
