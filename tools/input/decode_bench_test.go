package input

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/tools/describe"
)

// bigCall is a call_tool input whose arguments are about size bytes of small
// values: the shape that costs a decoder most per byte.
func bigCall(size int) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"server":"demo","name":"echo","arguments":{"items":[`)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"k":%d,"v":"x"}`, i)
	}
	b.WriteString(`]}}`)
	return json.RawMessage(b.String())
}

// BenchmarkDecodeCallInput is colibri's own check of a call_tool input
// (Own), on 8 MiB of arguments: the hosted tool's schema check
// decodes them anyway, so this one must not.
func BenchmarkDecodeCallInput(b *testing.B) {
	raw := bigCall(8 << 20)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		var in CallTool
		if err := Own(nil, describe.CallToolTool, raw, &in); err != nil {
			b.Fatal(err)
		}
	}
}
