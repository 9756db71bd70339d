//go:build race

package testenv

// RaceEnabled reports whether the test binary was built with -race; the
// binaries testenv builds for it are then race-enabled too.
const RaceEnabled = true
