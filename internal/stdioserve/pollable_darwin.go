package stdioserve

// pollsFIFOs is false on macOS (and iOS): its kqueue does not report a
// named pipe's last writer closing (Go issue 24164), so a stdin read
// through the poller would never see its end; Go's own os.Open keeps such
// files out of the poller for the same reason. A pipe and a named pipe
// look alike to fstat(2), so both stay blocking there; an editor's stdio
// socket (Node's spawn makes socket pairs) is still read through it.
const pollsFIFOs = false
