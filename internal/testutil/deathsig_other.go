//go:build !linux

package testutil

import "os/exec"

// setDeathSignal does nothing where the platform has no parent-death
// signal; a killed test binary may then leave its servers running.
func setDeathSignal(*exec.Cmd) {}
