package httpserve

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
)

// The store of resumable streams keeps an event as its caller is sent it,
// large strings put back, and counts it at that size: its strings belong to
// a request that ends with its call, before a stream is resumed. An event
// past the stream's bound is not kept, and its strings are not copied.
func TestEventStoreKeepsEventsLowered(t *testing.T) {
	table := bulk.New(1 << 10)
	store := newEventStore(table)
	ctx := t.Context()
	if err := store.Open(ctx, "s", "1"); err != nil {
		t.Fatal(err)
	}
	answer := func(n int) (msg, lifted []byte) {
		msg = []byte(`data: {"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + strings.Repeat("t", n) + `"}]}}` + "\n\n")
		lifted, _ = table.Lift(msg, "result")
		if bytes.Equal(lifted, msg) {
			t.Fatal("nothing lifted")
		}
		return msg, lifted
	}
	small, smallLifted := answer(10 << 10)
	if err := store.Append(ctx, "s", "1", smallLifted); err != nil {
		t.Fatal(err)
	}
	_, bigLifted := answer(streamStoreBytes)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := store.Append(ctx, "s", "1", bigLifted)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, errStreamFull) {
		t.Errorf("an event of %d bytes once lowered: %v, want it refused (%v)", streamStoreBytes, err, errStreamFull)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("refusing it allocated %d bytes: its strings were copied", n)
	}
	table.Release(1, 2) // the request ends with its call
	var got [][]byte
	for data, err := range store.After(ctx, "s", "1", -1) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, data)
	}
	if len(got) != 2 || !bytes.Equal(got[0], small) || len(got[1]) != 0 {
		t.Fatalf("stored %d events, want the answer as sent and a placeholder: %.100q", len(got), got)
	}
}
