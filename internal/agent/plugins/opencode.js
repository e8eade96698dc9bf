// gyrum:plugin — gyrum's activity hook for opencode and Kilo CLI, written by `gyrum setup`; `gyrum setup --uninstall` removes it.
//
// It runs gyrum's tool-call hook at the start and at the end of every tool
// call, as Claude Code runs command hooks: the hook command below through
// /bin/sh, a Claude Code payload on its stdin (hook_event_name PreToolUse,
// PostToolUse, or PostToolUseFailure for a tool that threw; tool_name,
// tool_use_id: the call's id, tool_input, cwd, session_id; at the end
// tool_response {output, exit_code} or the thrown error), at most 5 s.
// The hook records the agent's activity for the heartbeat loop of the
// ticket it works on (gyrum start-work). When the lease on that ticket has
// ended, the hook prints Claude Code's {"hookSpecificOutput":
// {"additionalContext": NOTICE}}, and the notice is added to the call's
// result, which the model reads next (a call that threw has no result to
// add to: its notice goes with the next call's). Nothing here ever fails or
// holds up a tool call: a hook that cannot run, or runs too long, is let
// go.
//
// Edit nothing here: `gyrum setup` rewrites the file (keeping a backup of an
// edited one), and `gyrum doctor` reports a file that differs from what it
// writes.
import { spawn } from "node:child_process"

const command = "__GYRUM_HOOK_COMMAND__"
const timeoutMs = 5000

// hook runs the hook command with payload on its stdin and resolves to what
// it printed ("" when it could not run or ran out of time).
function hook(payload) {
  return new Promise((resolve) => {
    let out = ""
    let settled = false
    let timer
    const done = () => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolve(out)
    }
    let child
    try {
      // A process group of its own, so a hook past its time is killed
      // whole.
      child = spawn("/bin/sh", ["-c", command], { stdio: ["pipe", "pipe", "ignore"], detached: true })
    } catch {
      done()
      return
    }
    timer = setTimeout(() => {
      try {
        process.kill(-child.pid, "SIGKILL")
      } catch {}
      done()
    }, timeoutMs)
    child.on("error", done)
    child.on("close", done)
    child.stdout.on("data", (chunk) => {
      if (out.length < 1 << 20) out += chunk
    })
    child.stdin.on("error", () => {})
    child.stdin.end(JSON.stringify(payload))
  })
}

// notice returns the lease-ended notice the hook printed, "" for none.
function notice(out) {
  for (const line of out.split("\n")) {
    try {
      const text = JSON.parse(line)?.hookSpecificOutput?.additionalContext
      if (typeof text === "string" && text !== "") return text
    } catch {}
  }
  return ""
}

export const GyrumActivity = async ({ directory } = {}) => {
  const cwd = directory || process.cwd()
  let pending = "" // notices of calls that threw, for the next result
  // extra: what the call's end adds, its result (tool_response: the
  // output, and a shell call's exit status) or its error, which the hook
  // fingerprints to tell a loop from polling whose output changes.
  const payload = (event, input, args, extra) => ({
    hook_event_name: event,
    session_id: input?.sessionID ?? "",
    tool_name: input?.tool ?? "",
    tool_use_id: input?.callID ?? "",
    tool_input: args ?? {},
    cwd,
    ...extra,
  })
  const response = (output) => {
    const r = { output: typeof output?.output === "string" ? output.output : "" }
    if (typeof output?.metadata?.exit === "number") r.exit_code = output.metadata.exit
    return { tool_response: r }
  }
  return {
    "tool.execute.before": async (input, output) => {
      try {
        await hook(payload("PreToolUse", input, output?.args))
      } catch {}
    },
    // A tool that throws (a read of a missing file) ends without
    // tool.execute.after: its part turns to status "error" on the event
    // bus instead. That is the call's end, PostToolUseFailure.
    event: async ({ event } = {}) => {
      try {
        const part = event?.type === "message.part.updated" ? event.properties?.part : undefined
        if (part?.type !== "tool" || part.state?.status !== "error") return
        const error = typeof part.state.error === "string" ? part.state.error : "error"
        const text = notice(await hook(payload("PostToolUseFailure", { sessionID: part.sessionID, tool: part.tool, callID: part.callID }, part.state.input, { error })))
        if (text !== "") pending = pending === "" ? text : pending + "\n\n" + text
      } catch {}
    },
    "tool.execute.after": async (input, output) => {
      try {
        let text = notice(await hook(payload("PostToolUse", input, input?.args, response(output))))
        if (pending !== "") {
          text = text === "" ? pending : pending + "\n\n" + text
          pending = ""
        }
        if (text !== "" && output) {
          output.output = typeof output.output === "string" && output.output !== "" ? output.output + "\n\n" + text : text
        }
      } catch {}
    },
  }
}
