package agenttest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPServerName is the name the MCP server of ServeMCP is configured under
// (MCPConfig). Its tools are MCPQuickTool and MCPWaitTool; each agent
// names them to its model in its own way (Claude Code:
// mcp__e2e__quick).
const MCPServerName = "e2e"

// The tools of ServeMCP.
const (
	// MCPQuickTool answers at once.
	MCPQuickTool = "quick"
	// MCPWaitTool answers when its input's "file" exists (or after 120 s),
	// using no CPU and starting no process meanwhile: a step that waits
	// on something remote.
	MCPWaitTool = "wait"
)

// WaitInput is the input of the wait tool.
type WaitInput struct {
	// File is the path whose existence ends the wait.
	File string `json:"file" jsonschema:"the file whose existence ends the wait"`
}

// MCPCall is what the server records of a call, one JSON file per call in
// its record directory.
type MCPCall struct {
	Tool string `json:"tool"`
	// ToolUseID is the agent's id of the call, where the agent sends it:
	// params._meta["claudecode/toolUseId"] (Claude Code).
	ToolUseID string    `json:"tool_use_id"`
	Began     time.Time `json:"began"`
	Ended     time.Time `json:"ended,omitzero"`
}

// ServeMCP runs a real stdio MCP server (the official Go SDK) with the
// tools quick and wait until stdin closes or ctx ends. Each call is
// recorded into recordDir (when not empty) as it begins and ends.
func ServeMCP(ctx context.Context, recordDir string) error {
	s := mcp.NewServer(&mcp.Implementation{Name: "agenttest-e2e", Version: "1.0.0"}, nil)
	record := func(req *mcp.CallToolRequest, began, ended time.Time) {
		if recordDir == "" {
			return
		}
		c := MCPCall{Tool: req.Params.Name, Began: began, Ended: ended}
		if id, ok := req.Params.Meta["claudecode/toolUseId"].(string); ok {
			c.ToolUseID = id
		}
		data, _ := json.Marshal(c)
		name := filepath.Join(recordDir, fmt.Sprintf("mcp-%d.json", began.UnixNano()))
		if err := os.WriteFile(name+".tmp", data, 0o600); err == nil {
			_ = os.Rename(name+".tmp", name)
		}
	}
	mcp.AddTool(s, &mcp.Tool{Name: MCPQuickTool, Description: "Answers at once."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			now := time.Now()
			record(req, now, now)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "quick done"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: MCPWaitTool, Description: "Waits until a file exists."},
		func(ctx context.Context, req *mcp.CallToolRequest, in WaitInput) (*mcp.CallToolResult, any, error) {
			began := time.Now()
			record(req, began, time.Time{})
			if in.File == "" {
				return nil, nil, errors.New("file is required")
			}
			deadline := time.NewTimer(120 * time.Second)
			defer deadline.Stop()
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for !exists(in.File) {
				select {
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				case <-deadline.C:
					return nil, nil, errors.New("timed out waiting for " + in.File)
				case <-tick.C:
				}
			}
			record(req, began, time.Now())
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wait done"}}}, nil, nil
		})
	return s.Run(ctx, &mcp.StdioTransport{})
}

// MCPConfig writes into dir the "mcpServers" JSON most agent CLIs read
// (Claude Code's --mcp-config file) that starts command with args as the
// stdio server MCPServerName, with env added to its environment, and
// returns the file's path.
func MCPConfig(t interface {
	Helper()
	Fatal(...any)
}, dir, command string, args []string, env map[string]string) string {
	t.Helper()
	cfg := map[string]any{"mcpServers": map[string]any{
		MCPServerName: map[string]any{"type": "stdio", "command": command, "args": args, "env": env},
	}}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// MCPCalls reads the calls recorded in dir, oldest first.
func MCPCalls(dir string) []MCPCall {
	names, _ := filepath.Glob(filepath.Join(dir, "mcp-*.json"))
	var out []MCPCall
	for _, n := range names { // Glob sorts; the names hold the start time
		data, err := os.ReadFile(n)
		if err != nil {
			continue
		}
		var c MCPCall
		if json.Unmarshal(data, &c) == nil {
			out = append(out, c)
		}
	}
	return out
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
