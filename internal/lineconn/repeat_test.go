package lineconn

import "testing"

func TestRepeatsDropsOnlyBackToBackListChanged(t *testing.T) {
	const (
		changed = `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`
		prompts = `{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}`
		reply   = `{"jsonrpc":"2.0","id":1,"result":{}}`
		request = `{"jsonrpc":"2.0","id":2,"method":"notifications/tools/list_changed"}`
	)
	var r repeats
	for i, tc := range []struct {
		line string
		drop bool
	}{
		{changed, false}, {changed, true}, {changed, true},
		{reply, false}, {changed, false}, // something came between
		{prompts, false}, {changed, false}, // another list
		{request, false}, {request, false}, // with an id: not a notification
	} {
		if got := r.drop([][]byte{[]byte(tc.line)}); got != tc.drop {
			t.Errorf("line %d (%s): drop %v, want %v", i, tc.line, got, tc.drop)
		}
	}
}
