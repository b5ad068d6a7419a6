package lineconn

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// go-sdk alone, on one 8 MiB message: what its decoding and encoding of a
// message cost, against one scan of the same bytes (json.Valid) and
// against Encode. Run with
//
//	go test -run '^$' -bench . -benchmem ./internal/lineconn

func bigMessage() []byte {
	return []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"` +
		strings.Repeat("0123456789abcdef", 8<<20/16) + `"}}}`)
}

// BenchmarkSDKDecodeMessage is go-sdk's jsonrpc.DecodeMessage: a depth walk,
// then a decoder that copies the message into a buffer it grows as it reads.
func BenchmarkSDKDecodeMessage(b *testing.B) {
	data := bigMessage()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := jsonrpc.DecodeMessage(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScan is one pass of encoding/json's scanner over the same bytes.
func BenchmarkScan(b *testing.B) {
	data := bigMessage()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if !json.Valid(data) {
			b.Fatal("invalid")
		}
	}
}

// BenchmarkSDKEncodeMessage is go-sdk's jsonrpc.EncodeMessage of a request
// whose params are already JSON: it compacts them into a growing buffer.
func BenchmarkSDKEncodeMessage(b *testing.B) {
	msg := bigRequest(b)
	b.SetBytes(int64(len(msg.Params)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := jsonrpc.EncodeMessage(msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncode is Encode of the same request: checked, spliced in once.
func BenchmarkEncode(b *testing.B) {
	msg := bigRequest(b)
	b.SetBytes(int64(len(msg.Params)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(msg); err != nil {
			b.Fatal(err)
		}
	}
}

func bigRequest(b *testing.B) *jsonrpc.Request {
	m, err := jsonrpc.DecodeMessage(bigMessage())
	if err != nil {
		b.Fatal(err)
	}
	return m.(*jsonrpc.Request)
}
