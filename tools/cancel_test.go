package tools

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeConn plays a caller: Read returns the queued messages, Write records.
type fakeConn struct {
	in      []jsonrpc.Message
	written []jsonrpc.ID
}

func (f *fakeConn) Connect(context.Context) (mcp.Connection, error) { return f, nil }
func (f *fakeConn) Read(context.Context) (jsonrpc.Message, error) {
	if len(f.in) == 0 {
		return nil, io.EOF
	}
	m := f.in[0]
	f.in = f.in[1:]
	return m, nil
}
func (f *fakeConn) Write(_ context.Context, m jsonrpc.Message) error {
	f.written = append(f.written, m.(*jsonrpc.Response).ID)
	return nil
}
func (f *fakeConn) Close() error      { return nil }
func (f *fakeConn) SessionID() string { return "" }

func rid(id int64) jsonrpc.ID {
	v, _ := jsonrpc.MakeID(float64(id))
	return v
}

func call(id int64) *jsonrpc.Request {
	return &jsonrpc.Request{ID: rid(id), Method: "tools/call"}
}

func cancel(id int64) *jsonrpc.Request {
	return &jsonrpc.Request{Method: "notifications/cancelled", Params: []byte(fmt.Sprintf(`{"requestId":%d}`, id))}
}

func answer(id int64) *jsonrpc.Response {
	return &jsonrpc.Response{ID: rid(id), Result: []byte("{}")}
}

func TestQuietCancel(t *testing.T) {
	ctx := context.Background()
	f := &fakeConn{}
	conn, _ := QuietCancel(f).Connect(ctx)
	qc := conn.(*quietConn)
	read := func(msgs ...jsonrpc.Message) {
		f.in = append(f.in, msgs...)
		for range msgs {
			conn.Read(ctx)
		}
	}

	// Cancelled while in flight: no answer.
	read(call(1), cancel(1))
	conn.Write(ctx, answer(1))
	// Cancelled after its answer: ignored, and a request reusing the id is
	// answered.
	read(call(2))
	conn.Write(ctx, answer(2))
	read(cancel(2), call(2))
	conn.Write(ctx, answer(2))
	// A cancellation of an id never seen is not remembered.
	read(cancel(99))

	if fmt.Sprint(f.written) != fmt.Sprint([]jsonrpc.ID{rid(2), rid(2)}) {
		t.Errorf("answers written: %v, want 2 twice (1 dropped)", f.written)
	}
	if len(qc.inflight) != 0 || qc.cancelled != 0 {
		t.Errorf("remembered after every request was answered: %v (%d cancelled)", qc.inflight, qc.cancelled)
	}

	// At most maxCancelled cancellations are remembered at once.
	for i := range int64(maxCancelled + 10) {
		read(call(1000+i), cancel(1000+i))
	}
	if qc.cancelled != maxCancelled {
		t.Errorf("%d cancellations remembered, want the bound %d", qc.cancelled, maxCancelled)
	}
	for i := range int64(maxCancelled + 10) {
		conn.Write(ctx, answer(1000+i))
	}
	if len(qc.inflight) != 0 || qc.cancelled != 0 || len(f.written) != 2+10 {
		t.Errorf("after the answers: %d in flight, %d cancelled, %d written (want 0, 0, 12)", len(qc.inflight), qc.cancelled, len(f.written))
	}
}
