package testutil

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the kernel kill cmd's process when the thread that
// starts it ends.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
