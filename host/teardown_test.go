package host_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// politeGrace is the TerminateGrace of these tests: a server that leaves
// as it chooses is never hurried by SIGTERM on a loaded machine (the harness's
// 300 ms is little more than the goodbye fake's own 100 ms pause), and the
// wait ends as soon as it has left.
const politeGrace = 10 * time.Second

// Teardown closes the server's stdin and goes on reading its stdout until
// it has left: a server that writes as it shuts down (a last log message,
// the answer to a call it was cancelled in) leaves as it chose, with status
// 0, not killed by SIGPIPE on a pipe colibri closed under it.
func TestTeardownLetsTheServerSayGoodbye(t *testing.T) {
	for _, srv := range []*registry.Server{fake("goodbye"), persistent("goodbye")} {
		t.Run(map[string]string{"": "per_request", registry.Persistent: "persistent"}[srv.Lifecycle], func(t *testing.T) {
			logger, logs := debugLogger()
			h := newHarness(t, host.Options{Logger: logger, TerminateGrace: politeGrace})
			if _, err := h.ListTools(t.Context(), srv, nil); err != nil {
				t.Fatal(err)
			}
			h.Close() // waits for the teardown
			got := logs()
			if !strings.Contains(got, "fakemcp: said goodbye") || !strings.Contains(got, `msg=stopped`) ||
				!strings.Contains(got, `status="exited with status 0"`) {
				t.Errorf("the server did not leave as it chose; colibri's log:\n%s", got)
			}
		})
	}
}

// What teardown reads from a server that writes without end once its stdin
// has closed is bounded (drainLimit, 1 MiB): past it, the pipe is closed
// and the server, still writing, dies of SIGPIPE.
func TestTeardownDrainIsBounded(t *testing.T) {
	logger, logs := debugLogger()
	h := newHarness(t, host.Options{Logger: logger, TerminateGrace: politeGrace})
	if _, err := h.ListTools(t.Context(), fake("flood-at-exit"), nil); err != nil {
		t.Fatal(err)
	}
	h.Close()
	most := 0
	for _, m := range regexp.MustCompile(`fakemcp: wrote (\d+)`).FindAllStringSubmatch(logs(), -1) {
		n, _ := strconv.Atoi(m[1])
		most = max(most, n)
	}
	// The pipe's own buffer (64 KiB) and one write in flight come on top.
	if bound := 1<<20 + 2*64<<10; most == 0 || most > bound {
		t.Errorf("the server wrote %d bytes at exit; want some, and at most %d", most, bound)
	}
	if got := logs(); !strings.Contains(got, `status="killed by signal broken pipe"`) {
		t.Errorf("the flooding server was not ended by the closed pipe; colibri's log:\n%s", got)
	}
}

// The SDK's reader is always waiting in a read of the server's stdout, so
// the server's first words after colibri closed its stdin come back from
// that read. They are the drain's, not a message: they are not counted
// against the result limit, and a goodbye longer than the limit (a log
// line, the large answer of a call cancelled as it finished) does not get
// the server killed as too large.
func TestTeardownGoodbyeIsNotAMessage(t *testing.T) {
	logger, logs := debugLogger()
	h := newHarness(t, host.Options{Logger: logger, TerminateGrace: politeGrace, MaxResultBytes: 8 << 10})
	srv := fake("goodbye")
	srv.Env["FAKEMCP_GOODBYE_BYTES"] = strconv.Itoa(200 << 10)
	if _, err := h.ListTools(t.Context(), srv, nil); err != nil {
		t.Fatal(err)
	}
	h.Close()
	if got := logs(); !strings.Contains(got, "fakemcp: said goodbye") || !strings.Contains(got, `status="exited with status 0"`) {
		t.Errorf("the server was not let leave after a goodbye longer than the result limit; colibri's log:\n%s", got)
	}
}
