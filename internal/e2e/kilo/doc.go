// Package kilo holds end-to-end tests that drive the real Kilo CLI (its
// agenttest.Agent: kilo_test.go) against agenttest's scripted fake of the
// OpenAI chat completions API, with gyrum's plugin written by the real
// `gyrum setup --agents kilo`, and a real warp on scaled timings. Kilo CLI
// is an opencode fork: the tests are internal/e2e/opencode's, run on it.
// They are in package kilo_test; docs/agents/kilo.md records what they
// measured.
//
// Run them with the pinned CLI installed:
//
//	export GYRUM_TEST_KILO=$(.ci/install-kilo)
//	go test ./internal/e2e/kilo/ -v
//
// Without a CLI they skip, unless CI is set: then they fail.
package kilo
