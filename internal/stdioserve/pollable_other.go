//go:build !darwin

package stdioserve

// pollsFIFOs: elsewhere (Linux, FreeBSD) the poller reports a pipe's end
// (see pollable_darwin.go).
const pollsFIFOs = true
