//go:build !race

package testbuild

// Race is true when this test binary was built with the race detector.
const Race = false
