//go:build !nostrict

package strict

// reading is whether Check and Value read at all: always, in every build
// but the one `make bench` makes with the build tag nostrict to measure
// what strict reading costs (reading_off.go).
const reading = true
