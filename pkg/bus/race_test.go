//go:build race

package bus_test

// raceEnabled reports whether the test binary was built with -race.
const raceEnabled = true
