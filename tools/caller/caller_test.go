package caller

import (
	"maps"
	"strings"
	"testing"
)

// Only the W3C trace context passes from a caller's _meta to the hosted
// request: string values of its three keys, bounded, on one line; nothing
// else of _meta.
func TestTraceContext(t *testing.T) {
	got := traceContext(map[string]any{
		"traceparent":         "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"tracestate":          strings.Repeat("x", maxTraceValue+1), // too long
		"baggage":             "a=1\r\nInjected: yes",               // a second line
		"progressToken":       "p",
		"io.modelcontext/any": "v",
	})
	want := map[string]any{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	if !maps.Equal(got, want) {
		t.Errorf("traceContext = %v, want %v", got, want)
	}
	if got := traceContext(map[string]any{"traceparent": 7}); got != nil {
		t.Errorf("a value that is not a string passed: %v", got)
	}
}
