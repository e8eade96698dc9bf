// Command gyrum-hook is the agent's tool-call hook alone: what
// `gyrum touch-activity` does, in a binary that links only the hook's code
// path, because the agent runs it before and after every tool call and a
// process start of the whole gyrum CLI costs several times a `touch`.
// `gyrum setup` installs it when it sits beside gyrum. It exits 0 whatever
// happens: a hook must never fail the agent's tool call. `gyrum-hook
// --version` alone prints the release's version stamp.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/gyrum-labs/warp/internal/hook"
	"github.com/gyrum-labs/warp/internal/version"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Println(version.Get("gyrum-hook").String())
		return
	}
	hook.Main(os.Args[1:], hook.Env{Stdin: os.Stdin, Stdout: os.Stdout, Getenv: os.Getenv, Getwd: os.Getwd, Now: time.Now(), Ask: hook.AskByExec()})
}
