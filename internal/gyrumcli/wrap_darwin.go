package gyrumcli

import "os/exec"

// tieToParent is best effort on macOS, which has no parent-death signal:
// gyrum forwards SIGINT, SIGTERM and SIGHUP to CMD, but if gyrum itself is
// SIGKILLed, CMD runs on (its loop sees gyrum gone and reports
// parent-exited, so the lease lapses on schedule).
func tieToParent(cmd *exec.Cmd) {}
