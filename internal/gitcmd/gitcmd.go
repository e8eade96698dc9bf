// Package gitcmd runs git for gyrum: start-work's worktrees and the
// snapshots of a lease's worktree.
package gitcmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Options say how git runs.
type Options struct {
	// Quiet turns the repository's hooks and fsmonitor off, and drops the
	// GIT_* variables that would point git elsewhere (a hook's GIT_DIR or
	// GIT_INDEX_FILE): for git work the user did not ask for, such as a
	// snapshot. Without it git runs as the user would run it.
	Quiet bool
	// Env is added to the environment.
	Env []string
}

// Run runs git with args in dir and returns its output, trimmed. A
// failure's error names the command and carries git's message.
func Run(ctx context.Context, dir string, o Options, args ...string) (string, error) {
	full := args
	if o.Quiet {
		full = append([]string{"-c", "core.hooksPath=" + os.DevNull, "-c", "core.fsmonitor=false"}, args...)
	}
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = dir
	if o.Quiet || len(o.Env) > 0 {
		env := os.Environ()
		if o.Quiet {
			env = cleanEnv(env)
		}
		cmd.Env = append(env, o.Env...)
	}
	// A process git leaves behind (a repository's hook still running once
	// git is killed or done) keeps its output pipes open: Wait stops
	// waiting for them after this long instead of with that process.
	cmd.WaitDelay = 2 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
	}
	return strings.TrimSpace(out.String()), nil
}

// cleanEnv is env without the GIT_* variables that would point git
// elsewhere.
func cleanEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR", "GIT_PREFIX":
			continue
		}
		out = append(out, kv)
	}
	return out
}
