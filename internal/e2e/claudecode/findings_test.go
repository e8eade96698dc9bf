package claudecode_test

// These tests pin down the behaviour of the real Claude Code CLI that
// docs/agents/claude-code.md reports; each names the finding it proves.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

// (a) Offline in -p mode the CLI sends only main-conversation requests:
// POST /v1/messages?beta=true, streaming, with the tools, one per model
// turn. Without CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC it also probes
// HEAD /api/hello first.
func TestRequestSequence(t *testing.T) {
	claude.Require(t)
	project := e2etest.NewProject(t)
	call := Bash("echo one")
	model := agenttest.NewAnthropic(t, agenttest.Calls(call), agenttest.Text("Finished."))
	s := start(t, model, project, agenttest.Options{Prompt: "PROMPT-A"})
	s.WaitOK(e2etest.SessionTimeout)

	reqs := model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2:\n%s", len(reqs), model.Summary())
	}
	t.Logf("first request %v after start; exit %v after start", reqs[0].At.Sub(s.Started), s.Ended().Sub(s.Started))
	for i, r := range reqs {
		if r.Kind != agenttest.KindMain || r.Method != "POST" || r.Path != "/v1/messages" || r.Query != "beta=true" ||
			!r.Stream || r.Turn != i {
			t.Errorf("request %d: %s %s?%s kind %s stream %v turn %d", i, r.Method, r.Path, r.Query, r.Kind, r.Stream, r.Turn)
		}
		if !r.HasText("PROMPT-A") || !strings.Contains(r.System, "cc_entrypoint=sdk-cli") {
			t.Errorf("request %d lacks the prompt or the sdk-cli billing header", i)
		}
		if sid := r.Header.Get("X-Claude-Code-Session-Id"); sid == "" {
			t.Errorf("request %d: no X-Claude-Code-Session-Id header", i)
		}
		if ua := r.Header.Get("User-Agent"); !strings.HasPrefix(ua, "claude-cli/") {
			t.Errorf("request %d: User-Agent %q", i, ua)
		}
	}
	if tr, ok := model.ToolResult(call.ID); !ok || tr.Content != "one" || tr.Request != 2 {
		t.Errorf("tool result %+v", tr)
	}
	if out := s.Results(); len(out) != 1 || out[0]["result"] != "Finished." {
		t.Errorf("results %v", out)
	}

	// Nonessential traffic allowed: a connectivity probe comes first,
	// still no auxiliary messages call.
	model2 := agenttest.NewAnthropic(t, agenttest.Text("Hi."))
	s2 := start(t, model2, e2etest.NewProject(t), agenttest.Options{Env: map[string]string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": ""}})
	s2.WaitOK(e2etest.SessionTimeout)
	var kinds []string
	for _, r := range model2.Requests() {
		kinds = append(kinds, r.Method+" "+r.Path+" "+string(r.Kind))
	}
	t.Logf("with nonessential traffic: %v", kinds)
	if len(model2.MainRequests()) != 1 {
		t.Errorf("main requests: %v", kinds)
	}
	for _, r := range model2.Requests() {
		if r.Kind != agenttest.KindMain && !(r.Method == "HEAD" && r.Path == "/api/hello") {
			t.Errorf("unexpected auxiliary request %s %s (%s)", r.Method, r.Path, r.Kind)
		}
	}
}

// (b) CLAUDE_PID is the claude process (the pid the test started) in both
// the hook and the Bash tool environments; CLAUDE_CODE_SESSION_ID and
// CLAUDECODE=1 are in both; CLAUDE_PROJECT_DIR only in hooks,
// CLAUDE_CODE_EXECPATH only in the Bash tool.
func TestEnvironment(t *testing.T) {
	claude.Require(t)
	project := e2etest.NewProject(t)
	rec := newRecorder(t)
	call := Bash(bashRecord("env"))
	model := agenttest.NewAnthropic(t, agenttest.Calls(call), agenttest.Text("ok"))
	k, v := rec.env()
	s := start(t, model, project, agenttest.Options{Env: map[string]string{k: v},
		Settings: rec.settings("PreToolUse", "PostToolUse", "SessionStart", "Stop")})
	s.WaitOK(e2etest.SessionTimeout)

	pid := strconv.Itoa(s.Pid())
	bash := rec.one("BashTool", "")
	pre := rec.one("PreToolUse", call.ID)
	sessionID := model.Requests()[0].Header.Get("X-Claude-Code-Session-Id")
	for _, r := range append([]record{bash, pre}, rec.of("SessionStart", "")...) {
		if r.Env["CLAUDE_PID"] != pid {
			t.Errorf("%s: CLAUDE_PID=%q, claude pid %s", r.Event, r.Env["CLAUDE_PID"], pid)
		}
		if r.Env["CLAUDECODE"] != "1" {
			t.Errorf("%s: CLAUDECODE=%q", r.Event, r.Env["CLAUDECODE"])
		}
		if r.Env["CLAUDE_CODE_SESSION_ID"] == "" || r.Env["CLAUDE_CODE_SESSION_ID"] != sessionID {
			t.Errorf("%s: CLAUDE_CODE_SESSION_ID=%q, request header %q", r.Event, r.Env["CLAUDE_CODE_SESSION_ID"], sessionID)
		}
	}
	// CLAUDE_CODE_EXECPATH names the native binary, in the Bash tool only.
	if !strings.HasSuffix(bash.Env["CLAUDE_CODE_EXECPATH"], "/bin/claude.exe") {
		t.Errorf("Bash tool: CLAUDE_CODE_EXECPATH=%q", bash.Env["CLAUDE_CODE_EXECPATH"])
	}
	if v, ok := pre.Env["CLAUDE_CODE_EXECPATH"]; ok {
		t.Logf("hook has CLAUDE_CODE_EXECPATH=%q (measured: absent)", v)
	}
	if pre.Env["CLAUDE_PROJECT_DIR"] != project {
		t.Errorf("hook CLAUDE_PROJECT_DIR=%q, want %s", pre.Env["CLAUDE_PROJECT_DIR"], project)
	}
	if v, ok := bash.Env["CLAUDE_PROJECT_DIR"]; ok {
		t.Errorf("Bash tool has CLAUDE_PROJECT_DIR=%q (measured: absent)", v)
	}
	if pre.str("session_id") != sessionID {
		t.Errorf("payload session_id %q, header %q", pre.str("session_id"), sessionID)
	}
	// The command runs under the call's bash, a direct child of claude.
	if bash.Parent.Comm != "bash" || bash.Parent.PPID != s.Pid() {
		t.Errorf("Bash tool command's parent is %d %s (its parent %d), claude is %d", bash.PPID, bash.Parent.Comm, bash.Parent.PPID, s.Pid())
	}
	// The payload's key order (what the hook's scanner relies on).
	keys := payloadKeys(t, pre.Raw)
	want := "session_id transcript_path cwd prompt_id permission_mode effort hook_event_name tool_name tool_input tool_use_id"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("PreToolUse payload keys %q, want %q", got, want)
	}
	post := rec.one("PostToolUse", call.ID)
	t.Logf("PostToolUse payload keys: %v", payloadKeys(t, post.Raw))
	for _, r := range rec.records() {
		t.Logf("%s env: CLAUDE_PID=%s CLAUDE_CODE_SESSION_ID=%s CLAUDECODE=%s CLAUDE_PROJECT_DIR=%q", r.Event,
			r.Env["CLAUDE_PID"], r.Env["CLAUDE_CODE_SESSION_ID"], r.Env["CLAUDECODE"], r.Env["CLAUDE_PROJECT_DIR"])
	}
}

// payloadKeys returns the top-level keys of a JSON object in order.
func payloadKeys(t *testing.T, raw string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("payload %q is not an object", raw)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// (c) What a hook can show the model. additionalContext (PreToolUse,
// PostToolUse, PostToolUseFailure), a PostToolUse {"decision":"block"}
// reason and a PostToolUse exit 2 with stderr reach the next request as a
// role "system" message right after the tool_result; a PreToolUse exit 2
// replaces the tool result. systemMessage and plain stdout do not reach
// the model (systemMessage is shown to the user: stream-json), nor does
// hookSpecificOutput whose hookEventName is not the running event.
func TestHookOutputContract(t *testing.T) {
	claude.Require(t)
	project := e2etest.NewProject(t)
	rec := newRecorder(t)
	type variant struct {
		name  string
		call  agenttest.Call
		reply reply
		// after is the text expected after the tool result; "" when the
		// marker must not reach the model at all.
		after string
	}
	mk := func(name, event, stdout, stderr string, exit int, after string) variant {
		c := Bash("echo " + name)
		return variant{name, c, reply{Event: event, Match: "echo " + name + `"`, Stdout: stdout, Stderr: stderr, Exit: exit}, after}
	}
	vs := []variant{
		mk("V-POST-CTX", "PostToolUse", `{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"MARKER-POST-CTX"}}`, "", 0,
			"PostToolUse:Bash hook additional context: MARKER-POST-CTX"),
		mk("V-PRE-CTX", "PreToolUse", `{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"MARKER-PRE-CTX"}}`, "", 0,
			"PreToolUse:Bash hook additional context: MARKER-PRE-CTX"),
		mk("V-BLOCK", "PostToolUse", `{"decision":"block","reason":"MARKER-BLOCK"}`, "", 0,
			"PostToolUse:Bash hook blocking error from command: "),
		mk("V-EXIT2", "PostToolUse", "", "MARKER-EXIT2", 2,
			"PostToolUse:Bash hook blocking error from command: "),
		mk("V-SYSMSG", "PostToolUse", `{"systemMessage":"MARKER-SYSMSG"}`, "", 0, ""),
		mk("V-PLAIN", "PostToolUse", "MARKER-PLAIN plain stdout\n", "", 0, ""),
		mk("V-PRE-SYSMSG", "PreToolUse", `{"systemMessage":"MARKER-PRE-SYSMSG"}`, "", 0, ""),
		mk("V-PRE-PLAIN", "PreToolUse", "MARKER-PRE-PLAIN plain stdout\n", "", 0, ""),
		// hookEventName must name the running event: a wrong or missing
		// one makes the CLI reject the whole output.
		mk("V-WRONG-EVENT", "PostToolUse", `{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"MARKER-WRONG-EVENT"}}`, "", 0, ""),
		mk("V-NO-EVENT", "PostToolUse", `{"hookSpecificOutput":{"additionalContext":"MARKER-NO-EVENT"}}`, "", 0, ""),
	}
	fail := Bash("echo V-FAIL-CTX; exit 3")
	var replies []reply
	var turns []agenttest.Turn
	for _, v := range vs {
		replies = append(replies, v.reply)
		turns = append(turns, agenttest.Calls(v.call))
	}
	replies = append(replies, reply{Event: "PostToolUseFailure", Match: "V-FAIL-CTX",
		Stdout: `{"hookSpecificOutput":{"hookEventName":"PostToolUseFailure","additionalContext":"MARKER-FAIL-CTX"}}`})
	turns = append(turns, agenttest.Calls(fail), agenttest.Text("ok"))
	rec.setReplies(replies...)
	model := agenttest.NewAnthropic(t, turns...)
	k, v := rec.env()
	s := start(t, model, project, agenttest.Options{Env: map[string]string{k: v},
		Settings: rec.settings("PreToolUse", "PostToolUse", "PostToolUseFailure")})
	s.WaitOK(e2etest.SessionTimeout)

	marker := func(v variant) string {
		m := v.reply.Stdout + v.reply.Stderr
		i := strings.Index(m, "MARKER-")
		return strings.FieldsFunc(m[i:], func(r rune) bool { return r == '"' || r == ' ' || r == '\n' })[0]
	}
	for _, v := range vs {
		tr, ok := model.ToolResult(v.call.ID)
		if !ok {
			t.Errorf("%s: no tool result", v.name)
			continue
		}
		m := marker(v)
		t.Logf("%s: result %q after %q", v.name, tr.Content, tr.After)
		if strings.Contains(tr.Content, m) {
			t.Errorf("%s: %s is in the tool result itself", v.name, m)
		}
		after := strings.Join(tr.After, "\n")
		if v.after == "" {
			if model.SawText(m) {
				t.Errorf("%s: %s reached the model (measured: it does not)", v.name, m)
			}
			continue
		}
		if !strings.Contains(after, v.after) || !strings.Contains(after, m) {
			t.Errorf("%s: after the tool result %q, want %q with %s", v.name, after, v.after, m)
		}
	}
	if tr, _ := model.ToolResult(fail.ID); !tr.IsError || !strings.Contains(strings.Join(tr.After, "\n"),
		"PostToolUseFailure:Bash hook additional context: MARKER-FAIL-CTX") {
		t.Errorf("PostToolUseFailure context: %+v", tr)
	}
	// The context stays in the history: the last request still has it.
	main := model.MainRequests()
	if !main[len(main)-1].HasText("MARKER-POST-CTX") {
		t.Error("additional context dropped from later requests")
	}
	// systemMessage goes to the user (stream-json), not to the model.
	if !strings.Contains(s.Stdout(), "PostToolUse:Bash says: MARKER-SYSMSG") {
		t.Error("systemMessage not in the CLI's output")
	}
	// Where the context sits: a role "system" message after the result.
	r, _ := model.FirstWithText("MARKER-POST-CTX")
	found := false
	for _, m := range r.Messages {
		if m.Role == "system" && strings.Contains(strings.Join(m.Texts(), ""), "MARKER-POST-CTX") {
			found = true
		}
	}
	if !found {
		t.Error("additional context is not a role system message")
	}
}

// (d) run_in_background: PreToolUse and PostToolUse fire at once (the
// result says the command runs in the background), the model's turn ends,
// and the CLI waits with no hook until the job ends; then it fires
// UserPromptSubmit and wakes the model with a <task-notification> naming
// the tool_use_id (the output stays in a file). A script models it as
// Tools(bash-in-background), Text (the turn that ends), Text (the answer
// to the wake-up).
func TestBackgroundBash(t *testing.T) {
	claude.Require(t)
	project := e2etest.NewProject(t)
	rec := newRecorder(t)
	const jobSecs = 8
	job := Bash("sleep "+strconv.Itoa(jobSecs)+"; echo BG-DONE", Background(), Description("bg job"))
	model := agenttest.NewAnthropic(t, agenttest.Calls(job), agenttest.Text("Waiting for the job."), agenttest.Text("The job finished."))
	k, v := rec.env()
	s := start(t, model, project, agenttest.Options{Env: map[string]string{k: v},
		Settings: rec.settings("PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "Stop")})
	s.WaitOK(e2etest.SessionTimeout)

	pre, post := rec.one("PreToolUse", job.ID), rec.one("PostToolUse", job.ID)
	main := model.MainRequests()
	if len(main) != 3 {
		t.Fatalf("%d main requests, want 3:\n%s", len(main), model.Summary())
	}
	gap := post.At.Sub(pre.At)
	wake := main[2]
	t.Logf("PreToolUse→PostToolUse %v; request 2 at +%v; wake-up request at +%v after PreToolUse; exit at +%v",
		gap, main[1].At.Sub(pre.At), wake.At.Sub(pre.At), s.Ended().Sub(pre.At))
	t.Logf("hooks:\n%s", rec.summary())
	// "At once" against a job of jobSecs: measured ~0.1 s, and well before
	// the job ends whatever the load (2.4 s beside two CPU hogs and the
	// suite); a call answered when the job ends would take jobSecs.
	if gap >= jobSecs*time.Second/2 {
		t.Errorf("PostToolUse %v after PreToolUse; measured ~0.1 s, the job takes %ds", gap, jobSecs)
	}
	if !main[1].At.After(post.At) || main[1].At.Sub(pre.At) >= jobSecs*time.Second {
		t.Errorf("second request at %v, PostToolUse at %v; the job takes %ds", main[1].At, post.At, jobSecs)
	}
	if d := wake.At.Sub(pre.At); d < jobSecs*time.Second {
		t.Errorf("wake-up request %v after the call, before the job's %ds were over", d, jobSecs)
	}
	tr, _ := model.ToolResult(job.ID)
	if !strings.Contains(tr.Content, "Command running in background with ID:") {
		t.Errorf("immediate result %q", tr.Content)
	}
	last := strings.Join(wake.Messages[len(wake.Messages)-1].Texts(), "\n")
	for _, want := range []string{"<task-notification>", "<tool-use-id>" + job.ID + "</tool-use-id>", "<status>completed</status>", `"bg job" completed (exit code 0)`} {
		if !strings.Contains(last, want) {
			t.Errorf("wake-up message lacks %q:\n%s", want, last)
		}
	}
	if model.SawText("BG-DONE") {
		t.Error("the job's output reached the model without a Read")
	}
	// No tool hook while waiting; UserPromptSubmit marks the wake-up.
	for _, r := range rec.records() {
		if r.At.After(post.At) && r.At.Before(wake.At) && toolEvents[r.Event] {
			t.Errorf("%s fired while the job ran", r.Event)
		}
	}
	ups := rec.of("UserPromptSubmit", "")
	if len(ups) != 2 || ups[1].At.Before(pre.At.Add(jobSecs*time.Second)) || ups[1].At.After(wake.At) {
		t.Errorf("UserPromptSubmit records:\n%s", rec.summary())
	}
	if n := len(rec.of("Stop", "")); n != 2 {
		t.Errorf("%d Stop events, want 2 (after each model turn that ends)", n)
	}
	if n := len(s.Results()); n != 2 {
		t.Errorf("%d result events, want 2", n)
	}
}

// (e) A denied call fires PreToolUse and no Post event, both when the
// permission mode denies it (-p cannot ask) and when a PreToolUse hook
// exits 2. gyrum's in-flight marker of a denied call stays behind.
func TestDeniedCall(t *testing.T) {
	claude.Require(t)
	t.Run("permission-mode", func(t *testing.T) {
		project := e2etest.NewProject(t)
		setupHooks(t, project)
		d, err := gyrumdir.Create(project)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.WriteLease(gyrumdir.Lease{Ticket: "T-1", Epoch: 1, WarpURL: "http://127.0.0.1:9", Agent: "a", Host: "h", ClaimedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		rec := newRecorder(t)
		write := Write(filepath.Join(project, "denied.txt"), "x")
		model := agenttest.NewAnthropic(t, agenttest.Calls(write), agenttest.Text("ok"))
		k, v := rec.env()
		s := start(t, model, project, agenttest.Options{Ask: true, Env: map[string]string{k: v, "GYRUM_HOME": t.TempDir()},
			Settings: rec.settings("PreToolUse", "PostToolUse", "PostToolUseFailure")})
		s.WaitOK(e2etest.SessionTimeout)

		rec.one("PreToolUse", write.ID)
		if n := len(rec.of("PostToolUse", write.ID)) + len(rec.of("PostToolUseFailure", write.ID)); n != 0 {
			t.Errorf("%d Post events for the denied call:\n%s", n, rec.summary())
		}
		tr, _ := model.ToolResult(write.ID)
		if !tr.IsError || !strings.Contains(tr.Content, "haven't granted it yet") || e2etest.Exists(filepath.Join(project, "denied.txt")) {
			t.Errorf("denied result %+v", tr)
		}
		ms, _ := d.InFlight()
		t.Logf("gyrum in-flight markers after the denied call: %+v", ms)
		if res := s.Results(); len(res) == 1 {
			t.Logf("permission_denials: %v", res[0]["permission_denials"])
		}
	})
	t.Run("pretooluse-exit-2", func(t *testing.T) {
		project := e2etest.NewProject(t)
		rec := newRecorder(t)
		ran := filepath.Join(t.TempDir(), "ran")
		call := Bash("touch " + shellquote.Quote(ran))
		rec.setReplies(reply{Event: "PreToolUse", Match: "touch ", Stderr: "MARKER-DENY blocked by hook", Exit: 2})
		model := agenttest.NewAnthropic(t, agenttest.Calls(call), agenttest.Text("ok"))
		k, v := rec.env()
		s := start(t, model, project, agenttest.Options{Env: map[string]string{k: v},
			Settings: rec.settings("PreToolUse", "PostToolUse", "PostToolUseFailure")})
		s.WaitOK(e2etest.SessionTimeout)
		rec.one("PreToolUse", call.ID)
		if n := len(rec.of("PostToolUse", call.ID)) + len(rec.of("PostToolUseFailure", call.ID)); n != 0 {
			t.Errorf("%d Post events for the blocked call", n)
		}
		tr, _ := model.ToolResult(call.ID)
		if !tr.IsError || !strings.Contains(tr.Content, "PreToolUse:Bash hook error") || !strings.Contains(tr.Content, "MARKER-DENY") {
			t.Errorf("blocked result %+v", tr)
		}
		if e2etest.Exists(ran) {
			t.Error("the blocked command ran")
		}
	})
}

// (f) The hook payload's cwd is the shell's cwd after the call, as long as
// it stays inside the project; a cd outside is undone ("Shell cwd was
// reset") and cwd stays the project.
func TestCwd(t *testing.T) {
	claude.Require(t)
	project := e2etest.NewProject(t)
	outside := t.TempDir()
	rec := newRecorder(t)
	calls := []agenttest.Call{
		Bash("cd " + shellquote.Quote(outside) + " && pwd"),
		Bash("pwd"),
		Bash("mkdir -p sub && cd sub && pwd"),
		Bash("pwd"),
		Bash("cd .. && pwd"),
	}
	var turns []agenttest.Turn
	for _, c := range calls {
		turns = append(turns, agenttest.Calls(c))
	}
	model := agenttest.NewAnthropic(t, append(turns, agenttest.Text("ok"))...)
	k, v := rec.env()
	s := start(t, model, project, agenttest.Options{Env: map[string]string{k: v},
		Settings: rec.settings("PreToolUse", "PostToolUse")})
	s.WaitOK(e2etest.SessionTimeout)

	sub := filepath.Join(project, "sub")
	want := []struct{ out, pre, post string }{
		{outside + "\nShell cwd was reset to " + project, project, project},
		{project, project, project},
		{sub, project, sub},
		{sub, sub, sub},
		{project, sub, project},
	}
	for i, c := range calls {
		tr, _ := model.ToolResult(c.ID)
		pre, post := rec.one("PreToolUse", c.ID), rec.one("PostToolUse", c.ID)
		t.Logf("%-40q result %q; hook cwd pre %s post %s", c.Args["command"], tr.Content, pre.str("cwd"), post.str("cwd"))
		if tr.Content != want[i].out || pre.str("cwd") != want[i].pre || post.str("cwd") != want[i].post {
			t.Errorf("call %d %q: result %q pre %s post %s; want %q %s %s", i, c.Args["command"], tr.Content,
				pre.str("cwd"), post.str("cwd"), want[i].out, want[i].pre, want[i].post)
		}
	}
}

// (g) The process tree while tool calls run: every Bash call (foreground
// or background) is a `/bin/bash -c` child of claude in its own session;
// hooks are `/bin/sh -c CMD` children of claude in their own session,
// with the hook command below the sh.
func TestProcessTree(t *testing.T) {
	claude.Require(t)
	project := e2etest.NewProject(t)
	rec := newRecorder(t)
	tmp := t.TempDir()
	f := func(name string) string { return filepath.Join(tmp, name) }
	waitLoop := func(started, release string) string {
		return "touch " + shellquote.Quote(started) + "; while [ ! -e " + shellquote.Quote(release) + " ]; do sleep 0.05; done"
	}
	bg := Bash(waitLoop(f("bg-started"), f("bg-release"))+"; echo BG", Background())
	fg := Bash(waitLoop(f("fg-started"), f("fg-release")) + "; echo FG")
	read := Read(filepath.Join(project, "README.md"))
	rec.setReplies(reply{Event: "PreToolUse", Match: `"tool_name":"Read"`, WaitFile: f("hook-release")})
	model := agenttest.NewAnthropic(t, agenttest.Calls(bg), agenttest.Calls(fg), agenttest.Calls(read),
		agenttest.Text("Waiting."), agenttest.Text("Done."))
	k, v := rec.env()
	s := start(t, model, project, agenttest.Options{Env: map[string]string{k: v},
		Settings: rec.settings("PreToolUse")})

	claude, ok := agenttest.Lookup(s.Pid())
	if !ok {
		t.Fatal("claude not in the process table")
	}
	if claude.PGID != s.Pid() {
		t.Errorf("claude pgid %d (started with its own group)", claude.PGID)
	}
	// shellOf returns the child of claude whose command line holds frag.
	shellOf := func(frag string) (agenttest.Proc, []agenttest.Proc) {
		t.Helper()
		desc := s.Descendants()
		for _, p := range desc {
			if p.PPID == s.Pid() && strings.Contains(strings.Join(p.Args, " "), frag) {
				return p, agenttest.Descendants(desc, p.PID)
			}
		}
		t.Fatalf("no child of claude runs %q:\n%s", frag, s.TreeString())
		return agenttest.Proc{}, nil
	}
	checkShell := func(what string, p agenttest.Proc, below []agenttest.Proc, wantBelow string) {
		t.Helper()
		if p.SID != p.PID || p.PGID != p.PID || p.SID == claude.SID {
			t.Errorf("%s shell %d: pgid %d sid %d, want its own session (claude sid %d)", what, p.PID, p.PGID, p.SID, claude.SID)
		}
		found := false
		for _, c := range below {
			if c.Comm == wantBelow {
				found = true
			}
		}
		if !found {
			t.Errorf("%s shell %d has no %s below it", what, p.PID, wantBelow)
		}
	}

	e2etest.Poll(t, "the background job and the foreground call", func() bool {
		return e2etest.Exists(f("bg-started")) && e2etest.Exists(f("fg-started"))
	})
	// The shells poll with short sleeps: wait for a moment when both have
	// their sleep child, rather than judge one snapshot between two sleeps.
	var bgShell, fgShell agenttest.Proc
	var bgBelow, fgBelow []agenttest.Proc
	hasSleep := func(below []agenttest.Proc) bool {
		for _, c := range below {
			if c.Comm == "sleep" {
				return true
			}
		}
		return false
	}
	e2etest.Poll(t, "a sleep below both tool shells", func() bool {
		bgShell, bgBelow = shellOf("bg-release")
		fgShell, fgBelow = shellOf("fg-release")
		return hasSleep(bgBelow) && hasSleep(fgBelow)
	})
	t.Logf("while a background job and a foreground call run:\n%s", s.TreeString())
	if bgShell.Comm != "bash" || fgShell.Comm != "bash" {
		t.Errorf("tool shells are %s and %s", bgShell.Comm, fgShell.Comm)
	}
	checkShell("background", bgShell, bgBelow, "sleep")
	checkShell("foreground", fgShell, fgBelow, "sleep")
	if err := os.WriteFile(f("fg-release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	e2etest.Poll(t, "the PreToolUse hook of the Read", func() bool { return len(rec.of("PreToolUse", read.ID)) == 1 })
	t.Logf("while a hook runs:\n%s", s.TreeString())
	hookSh, hookBelow := shellOf(recordArg + " PreToolUse")
	if hookSh.Comm != "sh" || len(hookSh.Args) < 3 || hookSh.Args[0] != "/bin/sh" || hookSh.Args[1] != "-c" {
		t.Errorf("hook runs as %v (%s), want /bin/sh -c CMD", hookSh.Args, hookSh.Comm)
	}
	checkShell("hook", hookSh, hookBelow, filepath.Base(testBin)[:min(15, len(filepath.Base(testBin)))])
	hr := rec.one("PreToolUse", read.ID)
	if hr.PPID != hookSh.PID || hr.Parent.PPID != s.Pid() {
		t.Errorf("hook process %d parent %d (its parent %d); sh %d claude %d", hr.PID, hr.PPID, hr.Parent.PPID, hookSh.PID, s.Pid())
	}
	for _, name := range []string{"hook-release", "bg-release"} {
		if err := os.WriteFile(f(name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s.WaitOK(e2etest.SessionTimeout)
	if left := s.Leftovers(); len(left) != 0 {
		t.Errorf("processes left after the session: %v", left)
	}
}

// A foreground Bash call that outlives its timeout is not killed: by
// default the CLI moves it to the background at the timeout, answers the
// call (PostToolUse, not PostToolUseFailure) and wakes the model when it
// ends. Only with CLAUDE_CODE_DISABLE_BACKGROUND_TASKS=1 is it killed
// (exit 143, PostToolUseFailure) — and then run_in_background is rejected
// as an invalid input, without any hook. A standalone long sleep is
// refused before any hook too.
func TestForegroundTimeout(t *testing.T) {
	claude.Require(t)
	t.Run("default-moves-to-background", func(t *testing.T) {
		project := e2etest.NewProject(t)
		rec := newRecorder(t)
		slow := Bash("echo start; sleep 3; echo late", Timeout(time.Second))
		sleep := Bash("sleep 700")
		model := agenttest.NewAnthropic(t, agenttest.Calls(slow), agenttest.Calls(sleep), agenttest.Text("Waiting."), agenttest.Text("Done."))
		k, v := rec.env()
		s := start(t, model, project, agenttest.Options{Env: map[string]string{k: v},
			Settings: rec.settings("PreToolUse", "PostToolUse", "PostToolUseFailure")})
		s.WaitOK(e2etest.SessionTimeout)
		t.Logf("hooks:\n%s", rec.summary())
		pre, post := rec.one("PreToolUse", slow.ID), rec.one("PostToolUse", slow.ID)
		if n := len(rec.of("PostToolUseFailure", "")); n != 0 {
			t.Errorf("%d PostToolUseFailure events", n)
		}
		tr, _ := model.ToolResult(slow.ID)
		t.Logf("timed-out call: PostToolUse %v after PreToolUse; result %q", post.At.Sub(pre.At), tr.Content)
		if tr.IsError || !strings.Contains(tr.Content, "was moved to the background") {
			t.Errorf("result %+v", tr)
		}
		main := model.MainRequests()
		if last := main[len(main)-1]; !last.HasText("<tool-use-id>"+slow.ID+"</tool-use-id>") || last.At.Sub(pre.At) < 3*time.Second {
			t.Errorf("no wake-up for the moved call after it ended:\n%s", model.Summary())
		}
		tr, _ = model.ToolResult(sleep.ID)
		if !tr.IsError || !strings.Contains(tr.Content, "Blocked: standalone sleep 700") {
			t.Errorf("standalone sleep: %+v", tr)
		}
		if n := len(rec.of("PreToolUse", sleep.ID)); n != 0 {
			t.Errorf("the refused sleep fired %d PreToolUse", n)
		}
	})
	t.Run("background-tasks-disabled", func(t *testing.T) {
		project := e2etest.NewProject(t)
		rec := newRecorder(t)
		slow := Bash("echo start; sleep 3; echo late", Timeout(time.Second))
		bg := Bash("echo bg", Background())
		model := agenttest.NewAnthropic(t, agenttest.Calls(slow), agenttest.Calls(bg), agenttest.Text("Done."))
		k, v := rec.env()
		s := start(t, model, project, agenttest.Options{Env: map[string]string{k: v, "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS": "1"},
			Settings: rec.settings("PreToolUse", "PostToolUse", "PostToolUseFailure")})
		s.WaitOK(e2etest.SessionTimeout)
		fail := rec.one("PostToolUseFailure", slow.ID)
		if len(rec.of("PostToolUse", slow.ID)) != 0 || !strings.Contains(fail.str("error"), "Exit code 143") {
			t.Errorf("timeout: %s", fail.Raw)
		}
		tr, _ := model.ToolResult(bg.ID)
		if !tr.IsError || !strings.Contains(tr.Content, "run_in_background") || len(rec.of("PreToolUse", bg.ID)) != 0 {
			t.Errorf("run_in_background with background tasks disabled: %+v\n%s", tr, rec.summary())
		}
	})
}

// A stalled model leaves the CLI waiting: the process lives, no hook runs,
// nothing else is sent. (After the fake closes, the CLI retries against
// a refused port and does not exit within seconds: the test kills it.)
func TestStalledModel(t *testing.T) {
	claude.Require(t)
	project := e2etest.NewProject(t)
	rec := newRecorder(t)
	call := Bash("echo before-stall")
	model := agenttest.NewAnthropic(t, agenttest.Calls(call), agenttest.Stall())
	k, v := rec.env()
	s := start(t, model, project, agenttest.Options{Env: map[string]string{k: v},
		Settings: rec.settings("PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop")})
	model.WaitRequests(e2etest.SessionTimeout, "the stalled request", func(r []agenttest.Request) bool { return len(r) == 2 })
	hooks := len(rec.records())
	select {
	case <-s.Done():
		t.Fatalf("claude exited %d while the model stalled", s.Wait(time.Second))
	case <-time.After(time.Second):
	}
	if n := len(rec.records()); n != hooks || n != 2 {
		t.Errorf("hooks during the stall: %d → %d, want 2 (Pre and Post of the call)\n%s", hooks, n, rec.summary())
	}
	if n := len(model.Requests()); n != 2 {
		t.Errorf("%d requests during the stall", n)
	}
	// Claude Code runs short housekeeping processes of its own (git),
	// which a loaded machine makes last: once they are done, nothing runs
	// under it while it waits.
	e2etest.Poll(t, "no process under claude while it waits", func() bool { return len(s.Descendants()) == 0 })
	s.Kill()
	if !s.Exited() {
		t.Error("Kill did not end the session")
	}
}

// Parallel tool calls (several tool_use blocks in one turn): the PreToolUse
// hooks run concurrently, each PostToolUse fires when its call ends, and
// all results come back in the next request.
func TestParallelCalls(t *testing.T) {
	claude.Require(t)
	project := e2etest.NewProject(t)
	rec := newRecorder(t)
	// The fast call takes a moment too: under load the three PreToolUse
	// hooks, which start together, are still recorded before it ends.
	slow := Bash("sleep 1.5; echo SLOW")
	fast := Bash("sleep 0.3; echo FAST")
	read := Read(filepath.Join(project, "README.md"))
	model := agenttest.NewAnthropic(t, agenttest.Calls(slow, fast, read), agenttest.Text("ok"))
	k, v := rec.env()
	s := start(t, model, project, agenttest.Options{Env: map[string]string{k: v},
		Settings: rec.settings("PreToolUse", "PostToolUse")})
	s.WaitOK(e2etest.SessionTimeout)
	t.Logf("hooks:\n%s", rec.summary())
	pres := []record{rec.one("PreToolUse", slow.ID), rec.one("PreToolUse", fast.ID), rec.one("PreToolUse", read.ID)}
	postSlow, postFast := rec.one("PostToolUse", slow.ID), rec.one("PostToolUse", fast.ID)
	for _, p := range pres {
		if p.At.After(postFast.At) {
			t.Errorf("PreToolUse of %s after the fast call's PostToolUse", p.str("tool_use_id"))
		}
	}
	if !postFast.At.Before(postSlow.At) {
		t.Error("the fast call's PostToolUse did not come first")
	}
	main := model.MainRequests()
	if len(main) != 2 {
		t.Fatalf("%d main requests", len(main))
	}
	for _, c := range []agenttest.Call{slow, fast, read} {
		if tr, ok := model.ToolResult(c.ID); !ok || tr.Request != main[1].N {
			t.Errorf("result of %s: %+v", c.ID, tr)
		}
	}
}
