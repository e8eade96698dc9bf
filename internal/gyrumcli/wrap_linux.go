package gyrumcli

import (
	"os/exec"
	"syscall"
)

// tieToParent makes the kernel send CMD SIGTERM when gyrum's thread that
// started it dies — SIGKILL and the OOM killer included — so a wrapped
// agent never runs on without its lease. The caller keeps that thread
// locked until CMD ends.
func tieToParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
}
