//go:build nostrict

package strict

// reading is false only in the colibri-mcp that `make bench`'s strict row
// builds (go build -tags nostrict) to measure strict reading's cost
// against (docs/benchmarks.md): Check and Value then accept everything.
// No setting, variable or flag turns strict reading off; this build is
// never installed or shipped.
const reading = false
