// Package opencode holds end-to-end tests that drive the real opencode
// CLI (its agenttest.Agent: opencode_test.go) against agenttest's scripted
// fake of the OpenAI chat completions API, with gyrum's plugin written by
// the real `gyrum setup --agents opencode`, and a real warp on scaled
// timings. The tests are in package opencode_test; docs/agents/opencode.md
// records what they measured.
//
// Run them with the pinned CLI installed:
//
//	export GYRUM_TEST_OPENCODE=$(.ci/install-opencode)
//	go test ./internal/e2e/opencode/ -v
//
// Without a CLI they skip, unless CI is set: then they fail.
package opencode
