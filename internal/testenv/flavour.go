package testenv

import "time"

// raceSlowdown is how much longer a hang guard is when the binaries are
// race-enabled: the race detector makes a program several times slower
// (and its start-up, shutdown and first requests more so).
const raceSlowdown = 4

// Flavour names the build of the binaries testenv starts: "race" when
// the test binary is race-enabled (RaceEnabled), "plain" otherwise.
func Flavour() string {
	if RaceEnabled {
		return "race"
	}
	return "plain"
}

// BuildFlags are the `go build` flags of the binaries' flavour: -race
// for a race-enabled test binary, none otherwise. A test that builds a
// binary of its own passes them first.
func BuildFlags() []string {
	if RaceEnabled {
		return []string{"-race"}
	}
	return nil
}

// HangGuard returns d, a bound that only catches a hang, stretched for
// the flavour of the binaries: d itself for plain builds, raceSlowdown
// times d for race-enabled ones. It is never a measure of speed.
func HangGuard(d time.Duration) time.Duration {
	if RaceEnabled {
		return raceSlowdown * d
	}
	return d
}
