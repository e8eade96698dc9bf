package codex_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

// HookEntry is one hook as Codex's app server lists it (hooks/list).
type HookEntry struct {
	Key         string `json:"key"`
	EventName   string `json:"eventName"`
	Command     string `json:"command"`
	Matcher     string `json:"matcher"`
	TimeoutSec  int    `json:"timeoutSec"`
	SourcePath  string `json:"sourcePath"`
	Source      string `json:"source"`
	Enabled     bool   `json:"enabled"`
	CurrentHash string `json:"currentHash"`
	TrustStatus string `json:"trustStatus"` // "trusted", "untrusted", "modified", "managed"
}

// appServer is a `codex app-server` on stdio, spoken to in JSON-RPC (one
// JSON object a line).
type appServer struct {
	cmd *exec.Cmd
	in  interface{ Write([]byte) (int, error) }
	out *bufio.Scanner
	n   int
}

func startAppServer(t testing.TB, bin string, home agenttest.Home) *appServer {
	t.Helper()
	cmd := exec.Command(bin, "app-server")
	cmd.Env = codex.Env(home, nil)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("codex app-server: %v", err)
	}
	a := &appServer{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	a.out.Buffer(make([]byte, 1<<20), 64<<20)
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	a.call(t, "initialize", map[string]any{"clientInfo": map[string]any{"name": "agenttest", "version": "0"}}, nil)
	a.send(t, map[string]any{"method": "initialized"})
	return a
}

func (a *appServer) send(t testing.TB, msg any) {
	t.Helper()
	data, _ := json.Marshal(msg)
	if _, err := a.in.Write(append(data, '\n')); err != nil {
		t.Fatalf("codex app-server: %v", err)
	}
}

// call sends a request and decodes its result into result, skipping the
// notifications that come before the answer.
func (a *appServer) call(t testing.TB, method string, params, result any) {
	t.Helper()
	a.n++
	id := a.n
	a.send(t, map[string]any{"id": id, "method": method, "params": params})
	for a.out.Scan() {
		var msg struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(a.out.Bytes(), &msg) != nil || msg.ID == nil || *msg.ID != id {
			continue
		}
		if len(msg.Error) > 0 && string(msg.Error) != "null" {
			t.Fatalf("codex app-server %s: %s", method, msg.Error)
		}
		if result != nil {
			if err := json.Unmarshal(msg.Result, result); err != nil {
				t.Fatalf("codex app-server %s: %v", method, err)
			}
		}
		return
	}
	t.Fatalf("codex app-server %s: no answer (%v)", method, a.out.Err())
}

// ListHooks returns the hooks Codex finds for a session in cwd, with their
// trust status, as its own /hooks review lists them.
func ListHooks(t testing.TB, bin string, home agenttest.Home, cwd string) []HookEntry {
	t.Helper()
	return startAppServer(t, bin, home).listHooks(t, cwd)
}

func (a *appServer) listHooks(t testing.TB, cwd string) []HookEntry {
	t.Helper()
	var res struct {
		Data []struct {
			Hooks  []HookEntry `json:"hooks"`
			Errors []any       `json:"errors"`
		} `json:"data"`
	}
	a.call(t, "hooks/list", map[string]any{"cwds": []string{cwd}}, &res)
	var out []HookEntry
	for _, d := range res.Data {
		out = append(out, d.Hooks...)
	}
	return out
}

// TrustHooks trusts every hook Codex finds for cwd, as a user who answers
// "Trust all and continue" at Codex's startup review does: through Codex's
// own app server (the TUI runs on it), reading each hook's current hash
// with hooks/list and writing it with config/batchWrite to
// [hooks.state."KEY"] trusted_hash in CODEX_HOME/config.toml. It returns
// the hooks as listed afterwards and fails the test when one is still not
// trusted.
func TrustHooks(t testing.TB, bin string, home agenttest.Home, cwd string) []HookEntry {
	t.Helper()
	a := startAppServer(t, bin, home)
	state := map[string]any{}
	for _, h := range a.listHooks(t, cwd) {
		if h.TrustStatus != "trusted" && h.TrustStatus != "managed" {
			state[h.Key] = map[string]any{"trusted_hash": h.CurrentHash}
		}
	}
	if len(state) > 0 {
		a.call(t, "config/batchWrite", map[string]any{"edits": []any{map[string]any{
			"keyPath": "hooks.state", "value": state, "mergeStrategy": "upsert"}}}, nil)
	}
	after := a.listHooks(t, cwd)
	for _, h := range after {
		if h.TrustStatus != "trusted" && h.TrustStatus != "managed" {
			t.Fatalf("codex still lists hook %s as %s after trusting it", h.Key, h.TrustStatus)
		}
	}
	return after
}

func (h HookEntry) String() string {
	return fmt.Sprintf("%s %s %q %s", h.Key, h.EventName, h.Command, h.TrustStatus)
}
