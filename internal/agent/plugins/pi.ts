// gyrum:plugin — gyrum's activity hook for pi, written by `gyrum setup`; `gyrum setup --uninstall` removes it.
//
// A pi extension that runs gyrum's tool-call hook at the start and at the
// end of every tool call, as Claude Code runs command hooks: the hook command
// below through /bin/sh, a Claude Code payload on its stdin (hook_event_name
// PreToolUse on tool_call; PostToolUse, or PostToolUseFailure for an error,
// on tool_result; tool_name, tool_use_id: the call's id, tool_input, cwd,
// session_id; on tool_result tool_response {content, is_error}, the call's
// result, which the hook fingerprints), at most 5 s. The hook records the agent's activity for the
// heartbeat loop of the ticket it works on (gyrum start-work). When the
// lease on that ticket has ended, the hook prints Claude Code's
// {"hookSpecificOutput": {"additionalContext": NOTICE}}, and the notice is
// added to the call's result, which the model reads next. Nothing here ever
// fails, blocks or holds up a tool call: a hook that cannot run, or runs too
// long, is let go.
//
// Edit nothing here: `gyrum setup` rewrites the file (keeping a backup of an
// edited one), and `gyrum doctor` reports a file that differs from what it
// writes.
import { spawn } from "node:child_process"

const command = "__GYRUM_HOOK_COMMAND__"
const timeoutMs = 5000

// hook runs the hook command with payload on its stdin and resolves to what
// it printed ("" when it could not run or ran out of time).
function hook(payload: Record<string, unknown>): Promise<string> {
  return new Promise((resolve) => {
    let out = ""
    let settled = false
    let timer: ReturnType<typeof setTimeout> | undefined
    const done = () => {
      if (settled) return
      settled = true
      if (timer !== undefined) clearTimeout(timer)
      resolve(out)
    }
    let child: ReturnType<typeof spawn>
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
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL")
      } catch {}
      done()
    }, timeoutMs)
    child.on("error", done)
    child.on("close", done)
    child.stdout?.on("data", (chunk) => {
      if (out.length < 1 << 20) out += chunk
    })
    child.stdin?.on("error", () => {})
    child.stdin?.end(JSON.stringify(payload))
  })
}

// notice returns the lease-ended notice the hook printed, "" for none.
function notice(out: string): string {
  for (const line of out.split("\n")) {
    try {
      const text = JSON.parse(line)?.hookSpecificOutput?.additionalContext
      if (typeof text === "string" && text !== "") return text
    } catch {}
  }
  return ""
}

// The parts of pi's tool events and context read here.
type ToolEvent = { toolName?: string; toolCallId?: string; input?: unknown; content?: unknown; isError?: boolean }
type Context = { cwd?: string; sessionManager?: { getSessionId?: () => string } }

function payload(event: string, e: ToolEvent | undefined, ctx: Context | undefined): Record<string, unknown> {
  let session = ""
  try {
    session = ctx?.sessionManager?.getSessionId?.() ?? ""
  } catch {}
  const p: Record<string, unknown> = {
    hook_event_name: event,
    session_id: session,
    tool_name: e?.toolName ?? "",
    tool_use_id: e?.toolCallId ?? "",
    tool_input: e?.input ?? {},
    cwd: ctx?.cwd || process.cwd(),
  }
  if (event !== "PreToolUse") {
    // The call's result, which the hook fingerprints to tell a loop from
    // polling whose output changes.
    p.tool_response = { content: Array.isArray(e?.content) ? e.content : [], is_error: e?.isError === true }
  }
  return p
}

export default function (pi: { on: (event: string, handler: (e: any, ctx: any) => unknown) => void }) {
  pi.on("tool_call", async (e: ToolEvent, ctx: Context) => {
    try {
      await hook(payload("PreToolUse", e, ctx))
    } catch {}
    return undefined
  })
  pi.on("tool_result", async (e: ToolEvent, ctx: Context) => {
    try {
      const text = notice(await hook(payload(e?.isError ? "PostToolUseFailure" : "PostToolUse", e, ctx)))
      if (text !== "") {
        const content = Array.isArray(e?.content) ? e.content : []
        return { content: [...content, { type: "text", text }] }
      }
    } catch {}
    return undefined
  })
}
