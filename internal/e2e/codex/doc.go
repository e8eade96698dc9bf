// Package codex holds the end-to-end tests of gyrum under the real Codex
// CLI (pinned by .ci/install-codex): `codex exec` (its agenttest.Agent:
// codex_test.go) driven by agenttest's scripted fake Responses API, with
// gyrum's hooks wired by the real `gyrum setup --agents codex` and trusted
// the way Codex's own review trusts them (appserver_test.go), the real
// gyrum binary and a real warp on scaled timings. What the CLI was
// measured to do is in docs/agents/codex.md.
//
// Without the CLI the tests skip, unless CI is set: then they fail.
package codex
