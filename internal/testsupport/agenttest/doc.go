// Package agenttest runs real agent CLIs under test against a scripted fake
// model, so the end-to-end suites (internal/e2e/...) can prove what the
// gyrum hook and heartbeat loop do under the real clients. The fake model is
// the only fake: the CLI, its hooks, its tools and the processes it starts
// are real.
//
// What it holds, apart from any one agent:
//
//   - CLI (cli.go): finding the pinned CLI a test drives, skipping without
//     it (failing under CI), checking its version.
//   - StartRun (run.go): one process run in its own process group, tagged
//     in its environment, everything it spawned killed at the end of the
//     test, its output and the fake's requests in the log of a failed test;
//     the process table (procs.go).
//   - Agent and Session (session.go): one session of an agent CLI in a
//     hermetic HOME and environment pointed at a fake model; an Agent is
//     the data of one CLI (its binary, its config directory, its variables)
//     and the function that turns the session's Options into its command
//     line. Each suite keeps its agent's Agent beside its tests.
//   - FakeModel (fake.go): an HTTP server on 127.0.0.1:0 that answers the
//     main conversation from a script of turns (text, tool calls, a stall)
//     and records every request in one form whatever the API. One file per
//     API shape encodes the turns and decodes the requests: anthropic.go
//     (Anthropic Messages: Claude Code), responses.go (OpenAI Responses:
//     Codex), gemini.go (Gemini streamGenerateContent: Gemini CLI), chat.go
//     (OpenAI chat completions: Qwen Code, GitHub Copilot CLI).
//   - ServeMCP (mcp.go): a real stdio MCP server whose tools the scripted
//     model can call.
//
// A test scripts one model turn per main request:
//
//	call := Bash("go vet ./...") // the suite's constructor of its agent's shell call
//	model := agenttest.NewAnthropic(t, agenttest.Calls(call), agenttest.Text("Done."))
//	s := claude.Start(t, model, agenttest.Options{Dir: project, Env: env})
//	s.WaitOK(20 * time.Second)
//	res, _ := model.ToolResult(call.ID) // what the model was shown
package agenttest
