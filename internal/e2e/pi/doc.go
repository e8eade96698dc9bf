// Package pi holds end-to-end tests that drive the real pi coding agent
// (its agenttest.Agent: pi_test.go) against agenttest's scripted fake of the
// OpenAI chat completions API, with gyrum's extension written by the real
// `gyrum setup --agents pi`, and a real warp on scaled timings. The tests
// are in package pi_test; docs/agents/pi.md records what they measured.
//
// Run them with the pinned CLI installed:
//
//	export GYRUM_TEST_PI=$(.ci/install-pi)
//	go test ./internal/e2e/pi/ -v
//
// Without a CLI they skip, unless CI is set: then they fail.
package pi
