package lineconn

import (
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// relayOn connects a Transport reading input whose Relay takes progress and
// log notifications, recording each (method and params) in the order given.
func relayOn(t *testing.T, input string) (*conn, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var got []string
	relay := func(method string, params json.RawMessage) bool {
		if method != "notifications/progress" && method != "notifications/message" {
			return false
		}
		mu.Lock()
		got = append(got, method+" "+string(params[:min(len(params), 40)]))
		mu.Unlock()
		return true
	}
	c, err := (&Transport{Reader: io.NopCloser(strings.NewReader(input)), Writer: discard{}, Relay: relay}).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*conn), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// The relay gets the notifications it takes, in read order, and go-sdk
// (Read) never sees them: short ones read without go-sdk's decoder, one
// longer than maxRelayedLine after it. A request (it has an id), whatever
// its params say, and a notification the relay declines reach Read.
func TestRelayTakesNotifications(t *testing.T) {
	long := strings.Repeat("p", 200<<10)
	input := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}` + "\n" +
		`{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{"note":"notifications/progress"}}` + "\n" +
		`  {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}` + "\r\n" +
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","message":"` + long + `"}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"
	c, relayed := relayOn(t, input)
	var got []string
	for {
		m, err := read(t, c)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch m := m.(type) {
		case *jsonrpc.Request:
			got = append(got, m.Method)
		case *jsonrpc.Response:
			got = append(got, "response")
		}
	}
	if want := []string{"sampling/createMessage", "notifications/tools/list_changed", "response"}; !slices.Equal(got, want) {
		t.Errorf("Read gave %q, want %q", got, want)
	}
	want := []string{
		`notifications/progress {"progressToken":"t","progress":1}`,
		`notifications/message {"level":"info","data":"x"}`,
		`notifications/progress {"progressToken":"t","message":"pppppppp`,
	}
	if got := relayed(); !slices.Equal(got, want) {
		t.Errorf("relayed %q, want %q", got, want)
	}
}

// A notification-shaped line that go-sdk would refuse is not relayed: it
// ends the connection, as it does without a relay.
func TestRelayRefusesWhatGoSDKRefuses(t *testing.T) {
	ok := `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"
	for name, line := range map[string]string{
		"two values":    `{"jsonrpc":"2.0","method":"notifications/progress","params":{}} {"jsonrpc":"2.0","method":"notifications/progress"}`,
		"not JSON-RPC":  `{"jsonrpc":"1.0","method":"notifications/progress","params":{}}`,
		"no version":    `{"method":"notifications/progress","params":{}}`,
		"Method":        `{"jsonrpc":"2.0","Method":"notifications/progress","params":{}}`,
		"truncated":     `{"jsonrpc":"2.0","method":"notifications/progress","params":{`,
		"a bad string":  `{"jsonrpc":"2.0","method":"notifications/progress","params":{"a":"\x"}}`,
		"a stray comma": `{"jsonrpc":"2.0","method":"notifications/progress","params":{},}`,
		"a key twice":   `{"jsonrpc":"2.0","method":"notifications/progress","method":"notifications/message","params":{}}`,
	} {
		t.Run(name, func(t *testing.T) {
			c, relayed := relayOn(t, ok+line+"\n"+ok)
			if _, err := read(t, c); err != nil {
				t.Fatalf("the line before: %v", err)
			}
			if _, err := read(t, c); err == nil || err == io.EOF {
				t.Fatalf("got %v, want an error", err)
			}
			if got := relayed(); len(got) > 0 {
				t.Errorf("relayed %q", got)
			}
		})
	}
}
