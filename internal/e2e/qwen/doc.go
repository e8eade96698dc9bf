// Package qwen holds end-to-end tests that drive the real Qwen Code CLI
// (its agenttest.Agent: qwen_test.go) against agenttest's scripted fake of
// the OpenAI chat completions API, with gyrum's hook wired by the real
// `gyrum setup --agents qwen` and a real warp on scaled timings. The
// tests are in package qwen_test; docs/agents/qwen-code.md records what
// they measured.
//
// Run them with the pinned CLI installed:
//
//	export GYRUM_TEST_QWEN=$(.ci/install-qwen)
//	go test ./internal/e2e/qwen/ -v
//
// Without a CLI they skip, unless CI is set: then they fail.
package qwen
