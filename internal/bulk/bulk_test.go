package bulk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// x is n bytes of text.
func x(n int) string { return strings.Repeat("x", n) }

// decode decodes a JSON message as the SDK's readers do (numbers kept exact).
func decode(t testing.TB, msg []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(msg))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decoding %q: %v", msg, err)
	}
	return v
}

// roundTrip lifts msg and checks what every lift must give: valid JSON,
// a Lower that joins back to msg byte for byte, values that decode like the
// originals. It returns the decoded values of what was lifted, in order.
func roundTrip(t testing.TB, tab *Table, msg []byte, under ...string) []string {
	t.Helper()
	lifted, refs := tab.Lift(msg, under...)
	defer tab.Release(refs...)
	if len(refs) == 0 {
		if &lifted[0] != &msg[0] || len(lifted) != len(msg) {
			t.Fatalf("nothing lifted, but Lift did not return msg itself")
		}
	}
	if !json.Valid(lifted) {
		t.Fatalf("lifted message is not valid JSON: %q", lifted)
	}
	segs, err := tab.Lower(lifted)
	if err != nil {
		t.Fatalf("Lower of Lift's output: %v", err)
	}
	if got := bytes.Join(segs, nil); !bytes.Equal(got, msg) {
		t.Fatalf("Lower(Lift(msg)) =\n%q\nwant\n%q", got, msg)
	}
	// Decoding the lifted message and resolving it is decoding the original.
	if got, want := tab.Resolve(decode(t, lifted)), decode(t, msg); !reflect.DeepEqual(got, want) {
		t.Fatalf("Resolve(decode(lifted)) = %v, want %v", got, want)
	}
	var values []string
	for _, r := range refs {
		ref := tab.marker + strconv.FormatUint(uint64(r), 10)
		if !bytes.Contains(lifted, []byte(`"`+ref+`"`)) {
			t.Fatalf("lifted message has no reference literal for ref %d", r)
		}
		v, ok := tab.Value(ref)
		if !ok {
			t.Fatalf("Value(%q): not live", ref)
		}
		if n, ok := tab.Size(ref); !ok || n < tab.min {
			t.Fatalf("Size(%q) = %d, %v; want >= %d", ref, n, ok, tab.min)
		}
		values = append(values, v)
	}
	return values
}

func TestLiftLowerRoundTrip(t *testing.T) {
	const min = 16 // a literal of 14 bytes of text and its quotes
	L1, L2, L3, L4 := x(20)+"1", x(20)+"2", x(30)+"3", x(40)+"4"
	args := []string{"params", "arguments"}
	for _, tc := range []struct {
		name  string
		msg   string
		under []string
		want  []string // the decoded values lifted, in order
	}{
		{"nested objects and arrays under the path",
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":"` + L1 + `","b":[1,"` + L2 + `",{"c":"` + L3 + `"}],"d":{"e":{"f":["` + L4 + `"]}}}}}`,
			args, []string{L1, L2, L3, L4}},
		{"a big key is not lifted",
			`{"params":{"arguments":{"` + L1 + `":1,"k":{"` + L2 + `":"` + L3 + `"}}}}`,
			args, []string{L3}},
		{"a big value outside the path is not lifted",
			`{"id":"` + L1 + `","params":{"name":"` + L2 + `","arguments":{"a":"` + L3 + `"}},"other":"` + L4 + `"}`,
			args, []string{L3}},
		{"siblings after the matched member are not lifted",
			`{"params":{"arguments":{"a":"` + L1 + `"},"after":"` + L2 + `"},"tail":"` + L3 + `"}`,
			args, []string{L1}},
		{"siblings after a matched array are not lifted",
			`{"params":{"arguments":["` + L1 + `"],"after":"` + L2 + `"},"tail":["` + L3 + `"]}`,
			args, []string{L1}},
		{"the path starts at the top-level object",
			`{"a":{"params":{"arguments":{"c":"` + L1 + `"}}},"arguments":{"c":"` + L2 + `"}}`,
			args, nil},
		{"the path's keys are matched in order, one level each",
			`{"params":{"x":{"arguments":{"a":"` + L1 + `"}},"arguments":{"b":"` + L2 + `"}},"next":{"arguments":"` + L3 + `"}}`,
			args, []string{L2}},
		{"a key after an array member is still a key",
			`{"params":{"arguments":{"a":[1,2,{"z":[]}],"` + L1 + `":"` + L2 + `","b":{},"` + L3 + `":null}}}`,
			args, []string{L2}},
		{"the member itself, a string",
			`{"jsonrpc":"2.0","id":7,"result":"` + L1 + `"}`,
			[]string{"result"}, []string{L1}},
		{"white space everywhere",
			" {\n \"params\" : {\t\"arguments\"\r\n:\n[ \"" + L1 + "\" , \"" + L2 + "\" ]\n } , \"x\" : \"" + L3 + "\" }\n",
			args, []string{L1, L2}},
		{"escaped backslashes before the closing quote",
			`{"params":{"arguments":{"a":"` + x(20) + `\\\\","b":"` + L2 + `"}}}`,
			args, []string{x(20) + `\\`, L2}},
		{"an escaped backslash then an escaped quote before the closing quote",
			`{"params":{"arguments":{"a":"` + x(20) + `\\\"","b":"` + L2 + `"}}}`,
			args, []string{x(20) + `\"`, L2}},
		{"an escaped quote followed by what looks like a member",
			`{"params":{"arguments":{"a":"` + x(20) + `\",\"b\":\"` + x(20) + `"}},"c":"` + L3 + `"}`,
			args, []string{x(20) + `","b":"` + x(20)}},
		{"a literal of min-1 bytes is not lifted, one of min bytes is",
			`{"params":{"arguments":{"short":"` + x(min-3) + `","exact":"` + x(min-2) + `"}}}`,
			args, []string{x(min - 2)}},
		{"invalid UTF-8 is not lifted",
			"{\"params\":{\"arguments\":{\"a\":\"" + x(20) + "\xff\xfe\",\"b\":\"" + L2 + "\"}}}",
			args, []string{L2}},
		{"an escaped surrogate alone is not lifted",
			`{"params":{"arguments":{"a":"` + x(20) + `\ud800","b":"` + x(20) + `\uDC00\uDBFF","c":"\uDfFf` + x(20) + `","d":"` + x(20) + `\ud83d\u0041","e":"` + x(20) + `\ud83d\\ude00"}}}`,
			args, nil},
		{"an escaped pair is lifted: it decodes to the character it names",
			`{"params":{"arguments":{"a":"` + x(20) + `\ud83d\ude00","b":"` + x(20) + `\uDBFF\uDFFF"}}}`,
			args, []string{x(20) + "\U0001F600", x(20) + "\U0010FFFF"}},
		{"other escapes are lifted",
			`{"params":{"arguments":{"a":"` + x(20) + `\u00e9\n\t\/\uD7FF\ue000","b":"` + x(20) + `\\ud800"}}}`,
			args, []string{x(20) + "\u00e9\n\t/\ud7ff\ue000", x(20) + `\ud800`}},
		{"top level not an object, with a path",
			`["` + L1 + `",{"params":{"arguments":{"a":"` + L2 + `"}}}]`,
			args, nil},
		{"top level a string, no path",
			`"` + L1 + `"`,
			nil, []string{L1}},
		{"no path: every string value, no key",
			`[{"` + L1 + `":"` + L2 + `"},"` + L3 + `",[[["` + L4 + `"]]],1.5e3,true,null,"short"]`,
			nil, []string{L2, L3, L4}},
		{"a path key written with escapes is not matched",
			`{"par\u0061ms":{"arguments":{"a":"` + L1 + `"}},"params":{"\u0061rguments":{"a":"` + L2 + `"}}}`,
			args, nil},
		{"several big literals in one message",
			`{"params":{"arguments":{"a":"` + L1 + `","b":"` + L1 + `","c":["` + L2 + `","` + L3 + `"]}}}`,
			args, []string{L1, L1, L2, L3}},
		{"scalars only",
			`{"params":{"arguments":{"a":1,"b":[true,false,null,-0.5e-7]}}}`,
			args, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !json.Valid([]byte(tc.msg)) {
				t.Fatalf("test message is not valid JSON: %s", tc.msg)
			}
			tab := New(min)
			got := roundTrip(t, tab, []byte(tc.msg), tc.under...)
			if !reflect.DeepEqual(got, tc.want) && (len(got) != 0 || len(tc.want) != 0) {
				t.Errorf("lifted %q\nwant %q", got, tc.want)
			}
			if n := tab.Len(); n != 0 {
				t.Errorf("Len() after Release = %d, want 0", n)
			}
		})
	}
}

func TestLiftShape(t *testing.T) {
	tab := New(0)
	if tab.min != DefaultMin {
		t.Fatalf("New(0).min = %d, want DefaultMin", tab.min)
	}
	if !regexp.MustCompile(`^colibri-bulk-[0-9a-f]{24}-$`).MatchString(tab.marker) || tab.marker == New(0).marker {
		t.Fatalf("marker %q: want colibri-bulk- and 24 random hex digits and -", tab.marker)
	}
	big := x(DefaultMin)
	msg := []byte(`{"params":{"arguments":{"text":"` + big + `"}}}`)
	lifted, refs := tab.Lift(msg, "params", "arguments")
	want := `{"params":{"arguments":{"text":"` + tab.marker + `1"}}}`
	if string(lifted) != want || !reflect.DeepEqual(refs, []Ref{1}) {
		t.Fatalf("Lift = %s, %v; want %s, [1]", lifted, refs, want)
	}
	// The entry is a sub-slice of msg, not a copy.
	tab.mu.Lock()
	lit := tab.entries[1]
	tab.mu.Unlock()
	if len(lit) != 1 || &lit[0][0] != &msg[len(`{"params":{"arguments":{"text":`)] {
		t.Errorf("the entry is not msg's own bytes")
	}
	// The reference survives an encoding/json round trip byte for byte, as
	// go-sdk decodes and re-encodes it.
	var v any
	if err := json.Unmarshal(lifted, &v); err != nil {
		t.Fatal(err)
	}
	again, err := json.Marshal(v)
	if err != nil || string(again) != want {
		t.Fatalf("re-encoded %s, %v; want %s", again, err, want)
	}
	ref := v.(map[string]any)["params"].(map[string]any)["arguments"].(map[string]any)["text"].(string)
	if got, ok := tab.Value(ref); !ok || got != big {
		t.Fatalf("Value(ref): %d bytes, %v", len(got), ok)
	}
	if n, ok := tab.Size(ref); !ok || n != len(big)+2 {
		t.Fatalf("Size(ref) = %d, %v; want %d", n, ok, len(big)+2)
	}
	// Ids are never reused.
	tab.Release(refs...)
	if _, refs2 := tab.Lift(msg, "params", "arguments"); !reflect.DeepEqual(refs2, []Ref{2}) {
		t.Fatalf("second Lift made %v, want [2]", refs2)
	}
}

func TestValueAndSizeOfWhatIsNotALiveReference(t *testing.T) {
	tab := New(16)
	_, refs := tab.Lift([]byte(`["` + x(20) + `"]`))
	ref := tab.marker + "1"
	other := New(16)
	for _, s := range []string{
		"", "hello", tab.marker, tab.marker + "2", tab.marker + "01", tab.marker + "1x", " " + ref,
		tab.marker + "99999999999999999999999", other.marker + "1",
	} {
		if v, ok := tab.Value(s); ok || v != s {
			t.Errorf("Value(%q) = %q, %v; want it back, false", s, v, ok)
		}
		if n, ok := tab.Size(s); ok || n != 0 {
			t.Errorf("Size(%q) = %d, %v; want 0, false", s, n, ok)
		}
		if got, want := tab.IsRef(s), s == tab.marker+"2"; got != want { // (2: a reference, to nothing yet)
			t.Errorf("IsRef(%q) = %v, want %v", s, got, want)
		}
	}
	if _, ok := tab.Value(ref); !ok {
		t.Fatalf("Value(live ref) not ok")
	}
	tab.Release(refs...)
	tab.Release(refs...) // again: ignored
	tab.Release(12345)   // unknown: ignored
	if v, ok := tab.Value(ref); ok || v != ref {
		t.Errorf("Value(released ref) = %q, %v; want it back, false", v, ok)
	}
	if !tab.IsRef(ref) {
		t.Error("IsRef(released ref) = false: a reference whose string is gone is still one")
	}
	if (*Table)(nil).IsRef(ref) {
		t.Error("a nil table's IsRef = true")
	}
}

func TestLowerRefusesStrayMarkers(t *testing.T) {
	tab := New(16)
	value := "SECRET-" + x(30)
	msg := []byte(`{"params":{"arguments":{"a":"` + value + `","b":"` + value + `"}}}`)
	_, refs := tab.Lift(msg, "params", "arguments")
	if len(refs) != 2 {
		t.Fatalf("lifted %d, want 2", len(refs))
	}
	tab.Release(refs[1])
	m := tab.marker
	live, released := m+"1", m+"2"

	// A well-formed one passes, even after a literal that ends in an escaped
	// backslash or holds an escaped quote.
	ok := `{"a":"x\\","b":"\"","c":"` + live + `","d":"` + live + `"}`
	segs, err := tab.Lower([]byte(ok))
	if err != nil {
		t.Fatalf("Lower(%s): %v", ok, err)
	}
	if got, want := string(bytes.Join(segs, nil)), `{"a":"x\\","b":"\"","c":"`+value+`","d":"`+value+`"}`; got != want {
		t.Fatalf("Lower = %s, want %s", got, want)
	}

	for _, tc := range []struct{ name, msg, want string }{
		{"inside a longer string", `{"error":"bad argument: ` + live + `"}`, "inside a longer string"},
		{"followed by more text", `{"error":"` + live + ` is bad"}`, "not a whole reference"},
		{"after an escaped quote", `{"error":"\"` + live + `\""}`, "inside a longer string"},
		{"after an escaped quote, right at the start", `{"error":"x\"` + live + `"}`, "inside a longer string"},
		{"unknown id", `{"a":"` + m + `999"}`, "reference 999 at byte 6 is unknown"},
		{"released id", `{"a":"` + released + `"}`, "reference 2 at byte 6: the string it stood for was released"},
		{"released id, between live ones", `["` + live + `","` + released + `","` + released + `","` + live + `"]`, "reference 2 at byte " + strconv.Itoa(len(live)+5) + ": the string it stood for was released"},
		{"one past the last id issued", `{"a":"` + m + `3"}`, "reference 3 at byte 6 is unknown"},
		// A released reference does not hide another fault after it (which
		// a face would log as the fault it is, not as a cancelled answer).
		{"a stray marker after a released id", `{"a":"` + released + `","error":"bad: ` + live + `"}`, "inside a longer string"},
		{"an unknown id after a released one", `["` + released + `","` + m + `999"]`, "reference 999 at byte " + strconv.Itoa(len(released)+5) + " is unknown"},
		{"outside a string, after a released id", `{"a":"` + released + `","b":` + live + `}`, "outside a string"},
		{"no id", `{"a":"` + m + `"}`, "not a whole reference"},
		{"a leading zero", `{"a":"` + m + `01"}`, "not a whole reference"},
		{"an id too large", `{"a":"` + m + `18446744073709551616"}`, "not a whole reference"},
		{"truncated", `{"a":"` + live, "unterminated string"},
		{"outside a string", `{"a":` + live + `}`, "outside a string"},
		{"outside a string, before a string", `{"a":` + live + `,"b":"c"}`, "outside a string"},
		{"a second marker after a good one", `["` + live + `","x` + live + `"]`, "inside a longer string"},
		{"a key", `{"note ` + live + `":1}`, "inside a longer string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			segs, err := tab.Lower([]byte(tc.msg))
			if err == nil {
				t.Fatalf("Lower(%s) = %q, want an error", tc.msg, segs)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to say %q", err, tc.want)
			}
			if errors.Is(err, ErrReleased) != strings.HasPrefix(tc.name, "released id") {
				t.Errorf("error %q: errors.Is(err, ErrReleased) = %v", err, errors.Is(err, ErrReleased))
			}
			if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), m) {
				t.Errorf("error %q shows the value or the marker", err)
			}
		})
	}

	// Without the marker, the message itself.
	plain := []byte(`{"a":"colibri-bulk-000000000000000000000000-1"}`)
	segs, err = tab.Lower(plain)
	if err != nil || len(segs) != 1 || &segs[0][0] != &plain[0] || len(segs[0]) != len(plain) {
		t.Fatalf("Lower(no marker) = %q, %v; want [msg]", segs, err)
	}
}

func TestNilTableIsDisabled(t *testing.T) {
	var tab *Table
	msg := []byte(`{"params":{"arguments":{"a":"` + x(DefaultMin) + `"}}}`)
	if got, refs := tab.Lift(msg, "params", "arguments"); &got[0] != &msg[0] || refs != nil {
		t.Errorf("nil Lift changed msg")
	}
	if segs, err := tab.Lower(msg); err != nil || len(segs) != 1 || &segs[0][0] != &msg[0] {
		t.Errorf("nil Lower = %d segments, %v", len(segs), err)
	}
	if v, ok := tab.Value("s"); v != "s" || ok {
		t.Errorf("nil Value = %q, %v", v, ok)
	}
	if n, ok := tab.Size("s"); n != 0 || ok {
		t.Errorf("nil Size = %d, %v", n, ok)
	}
	v := map[string]any{"a": "s"}
	if got := tab.Resolve(v); reflect.ValueOf(got).Pointer() != reflect.ValueOf(v).Pointer() {
		t.Errorf("nil Resolve copied")
	}
	tab.Release(1, 2)
	if tab.Len() != 0 {
		t.Errorf("nil Len != 0")
	}
	ctx := context.Background()
	got, leave, err := tab.Join(ctx, msg)
	if got != ctx || err != nil || OwnerFrom(ctx) != nil {
		t.Errorf("nil Join changed ctx, or failed: %v", err)
	}
	leave()
	o := tab.Own([]Ref{1})
	if o != nil || o.Table() != nil || o.Live() || o.Adopt([]Ref{1}) {
		t.Errorf("nil Owner is not inert")
	}
	o.Done()
}

func TestResolveCopiesOnlyThePathToAReference(t *testing.T) {
	tab := New(16)
	big := x(40) + "\u00e9"
	_, refs := tab.Lift([]byte(`"` + big + `"`))
	ref := tab.marker + strconv.FormatUint(uint64(refs[0]), 10)

	untouched := map[string]any{"n": json.Number("1"), "l": []any{"a", true, nil}}
	untouchedList := []any{1.5, "b"}
	v := map[string]any{
		"same":  untouched,
		"list":  untouchedList,
		"deep":  map[string]any{"args": []any{"x", ref, map[string]any{"r": ref}}},
		"plain": "text",
	}
	before := decode(t, mustMarshal(t, v))

	got := tab.Resolve(v).(map[string]any)
	if after := decode(t, mustMarshal(t, v)); !reflect.DeepEqual(after, before) {
		t.Fatalf("Resolve modified its input: %v", after)
	}
	want := map[string]any{
		"same":  untouched,
		"list":  untouchedList,
		"deep":  map[string]any{"args": []any{"x", big, map[string]any{"r": big}}},
		"plain": "text",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Resolve = %v, want %v", got, want)
	}
	if reflect.ValueOf(got["same"]).Pointer() != reflect.ValueOf(untouched).Pointer() ||
		&got["list"].([]any)[0] != &untouchedList[0] {
		t.Errorf("containers with no reference were copied")
	}
	if reflect.ValueOf(got).Pointer() == reflect.ValueOf(v).Pointer() {
		t.Errorf("the top container was not copied")
	}

	// No reference: v itself.
	none := map[string]any{"a": []any{"b", map[string]any{"c": "d"}}}
	if got := tab.Resolve(none); reflect.ValueOf(got).Pointer() != reflect.ValueOf(none).Pointer() {
		t.Errorf("Resolve copied a value with no reference")
	}
	list := []any{"a", 1.0}
	if got := tab.Resolve(list).([]any); &got[0] != &list[0] {
		t.Errorf("Resolve copied a list with no reference")
	}
	if got := tab.Resolve(ref); got != big {
		t.Errorf("Resolve(ref) = %q", got)
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ownedTable is a table that reports on ended when an owner has released
// what it owned.
func ownedTable() (*Table, chan struct{}) {
	tab := New(16)
	ended := make(chan struct{}, 1000)
	tab.ownerEnded = func() { ended <- struct{}{} }
	return tab, ended
}

func waitEnded(t *testing.T, ended chan struct{}) {
	t.Helper()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the owner was not let go within 10s of its last holder")
	}
}

// holdsOf is how many holds o has.
func holdsOf(o *Owner) int {
	o.t.mu.Lock()
	defer o.t.mu.Unlock()
	return o.holds
}

// waitHolds waits until o has n holds (a context's AfterFunc runs on a
// goroutine of its own).
func waitHolds(t *testing.T, o *Owner, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); holdsOf(o) != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the owner has %d holds after 10s, want %d", holdsOf(o), n)
		}
	}
}

// A request's strings live until the face is done with it, the call has
// returned and the call's context is done, in any order (a cancelled
// call's context ends before it returns: it still reads its arguments, for
// its audit line); the call finds its request by the references its
// arguments carry, and the strings of its answer join it.
func TestOwnerReleasesWhenTheLastHolderLetsGo(t *testing.T) {
	for _, order := range [][3]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}} {
		tab, ended := ownedTable()
		msg := []byte(`{"params":{"arguments":{"a":"` + x(20) + `","b":["` + x(30) + `"]}}}`)
		lifted, refs := tab.Lift(msg, "params", "arguments")
		o := tab.Own(refs)
		if o.Table() != tab || !o.Live() {
			t.Fatalf("Own: table %p, live %v", o.Table(), o.Live())
		}
		ctx, cancel := context.WithCancel(context.Background())
		ctx, leave, err := tab.Join(ctx, lifted)
		if err != nil || OwnerFrom(ctx) != o {
			t.Fatalf("Join = %p, %v; want the request's owner %p", OwnerFrom(ctx), err, o)
		}
		_, answer := tab.Lift([]byte(`"` + x(40) + `"`))
		if !o.Adopt(answer) || tab.Len() != 3 {
			t.Fatalf("Adopt: Len() = %d, want 3", tab.Len())
		}
		holders := [3]func(){o.Done, leave, cancel} // the face, the call's return, its context
		for i, h := range order[:2] {
			holders[h]()
			waitHolds(t, o, 2-i)
			if n := tab.Len(); n != 3 || !o.Live() {
				t.Fatalf("order %v: %d holders left, yet Len() = %d, live %v", order, 2-i, n, o.Live())
			}
		}
		holders[order[2]]()
		waitEnded(t, ended)
		if n, held := tab.Len(), tab.Held(); n != 0 || held != 0 || o.Live() {
			t.Fatalf("order %v: all let go, yet Len() = %d, Held() = %d, live %v", order, n, held, o.Live())
		}
		leave() // again: nothing
		if holdsOf(o) != 0 {
			t.Fatalf("a second leave took another hold away: %d", holdsOf(o))
		}
		// Adopting after the end releases at once.
		_, late := tab.Lift([]byte(`"` + x(40) + `"`))
		if o.Adopt(late) || tab.Len() != 0 {
			t.Fatalf("Adopt after the end: Len() = %d, want 0", tab.Len())
		}
	}
}

// A call that begins after its request was let go (an HTTP caller gone)
// is told its strings are gone, holds nothing, and is told so without the
// marker.
func TestJoinAfterTheRequestWasLetGo(t *testing.T) {
	tab, ended := ownedTable()
	lifted, refs := tab.Lift([]byte(`{"a":"`+x(20)+`"}`), "a")
	tab.Own(refs).Done()
	waitEnded(t, ended)
	ctx, leave, err := tab.Join(context.Background(), lifted)
	leave()
	if !errors.Is(err, ErrReleased) || OwnerFrom(ctx) != nil {
		t.Fatalf("Join of a released request = %v, owner %p; want ErrReleased and none", err, OwnerFrom(ctx))
	}
	if strings.Contains(err.Error(), tab.marker) {
		t.Fatalf("the error names the marker: %v", err)
	}
}

// A call with no lifted string (or only text that resembles a reference)
// gets an owner of its own, for its answer's strings, let go once it has
// returned and its context has ended.
func TestJoinWithoutReferences(t *testing.T) {
	tab, ended := ownedTable()
	_, other := tab.Lift([]byte(`"` + x(20) + `"`))
	o := tab.Own(other)
	defer o.Done()
	ref := tab.marker + strconv.FormatUint(uint64(other[0]), 10)
	for _, args := range []string{
		`{}`,
		`{"a":"x` + ref + `"}`,         // inside a longer string: not this request's
		`{"a":"` + ref + `x"}`,         // nor with more after it
		`{"a":"` + tab.marker + `"}`,   // no id
		`{"a":"` + tab.marker + `99"}`, // never issued
	} {
		ctx, cancel := context.WithCancel(context.Background())
		ctx, leave, err := tab.Join(ctx, []byte(args))
		leave()
		mine := OwnerFrom(ctx)
		if err != nil || mine == nil || mine == o {
			t.Fatalf("Join(%s) = %p, %v; want an owner of its own", args, mine, err)
		}
		_, answer := tab.Lift([]byte(`"` + x(40) + `"`))
		if !mine.Adopt(answer) {
			t.Fatalf("Adopt refused")
		}
		cancel()
		waitEnded(t, ended)
		if n := tab.Len(); n != 1 {
			t.Fatalf("Join(%s): after its context, Len() = %d, want the other request's 1", args, n)
		}
	}
}

// Adopt refuses as soon as the last holder has let go, before any
// AfterFunc has run.
func TestOwnerAdoptRightAfterTheEnd(t *testing.T) {
	tab, ended := ownedTable()
	ctx, cancel := context.WithCancel(context.Background())
	ctx, leave, _ := tab.Join(ctx, []byte(`{}`))
	o := OwnerFrom(ctx)
	leave()
	cancel()
	waitEnded(t, ended)
	_, refs := tab.Lift([]byte(`"` + x(20) + `"`))
	if o.Adopt(refs) {
		t.Errorf("Adopt after the end = true")
	}
	if n := tab.Len(); n != 0 {
		t.Errorf("Len() = %d, want 0: the refs were not released", n)
	}
}

func TestConcurrentUse(t *testing.T) {
	tab, ended := ownedTable()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				msg := []byte(`{"params":{"arguments":{"g":"` + x(20+g) + `","i":["` + x(20+i) + `"]}}}`)
				lifted, refs := tab.Lift(msg, "params", "arguments")
				if len(refs) != 2 {
					t.Errorf("lifted %d, want 2", len(refs))
					return
				}
				segs, err := tab.Lower(lifted)
				if err != nil || !bytes.Equal(bytes.Join(segs, nil), msg) {
					t.Errorf("round trip: %v", err)
					return
				}
				if i%2 == 0 {
					tab.Release(refs...)
					continue
				}
				o := tab.Own(refs)
				ctx, cancel := context.WithCancel(context.Background())
				_, leave, err := tab.Join(ctx, lifted)
				if err != nil {
					t.Errorf("Join: %v", err)
				}
				go o.Done()
				go leave()
				cancel()
			}
		})
	}
	wg.Wait()
	for range 8 * 50 {
		waitEnded(t, ended)
	}
	if n, held := tab.Len(), tab.Held(); n != 0 || held != 0 {
		t.Fatalf("Len() = %d, Held() = %d after every owner released, want 0", n, held)
	}
}

func FuzzLiftLower(f *testing.F) {
	for _, s := range []string{
		`{"params":{"arguments":{"a":"hello world","b":["x\\\\","y\\\"z"]}}}`,
		`{"params":{"arguments":"\u00e9\ud800\uDC00 \\ud800"}}`,
		`["abcdef",{"abcdef":"ghijkl"}]`,
		`"top level string"`,
		`{"result":{"content":[{"type":"text","text":"a\"b\\c\/d\n"}]}}`,
		"{\"a\":\"\xff\xfe invalid\"}",
		`{"params":{"arguments":{"a":"bad \q escape","b":"ok string"}}}`,
		"{\"params\":{\"arguments\":{\"a\":\"raw \x01 control\",\"b\":\"ok string\"}}}",
		`{"params":{"arguments":{"a":"bad \u12G4 hex","b":"ok string"}}}`,
		`{"params":{"arguments":{"a":"fine string"}}} trailing`,
		`{"params" {"arguments":{"a":"fine string"}}}`,
		`{"par\u0061ms":{"arguments":{"a":"hello"}}}`,
		`[1, -2.5e3, true, false, null, {}, [], ""]`,
	} {
		f.Add([]byte(s), "params.arguments")
		f.Add([]byte(s), "")
		f.Add([]byte(s), "result")
	}
	f.Fuzz(func(t *testing.T, msg []byte, path string) {
		var under []string
		if path != "" {
			under = strings.Split(path, ".")
		}
		tab := New(4)
		// Any bytes: the lifted message is valid JSON exactly when msg is
		// (the faces check the smaller one), and lowers back to msg.
		lifted, refs := tab.Lift(msg, under...)
		if json.Valid(lifted) != json.Valid(msg) {
			t.Fatalf("json.Valid(lifted) = %v, json.Valid(msg) = %v\nmsg %q\nlifted %q", json.Valid(lifted), json.Valid(msg), msg, lifted)
		}
		if parts, err := tab.Lower(lifted); err != nil || !bytes.Equal(bytes.Join(parts, nil), msg) {
			t.Fatalf("Lower(Lift(msg)) = %q, %v; want msg %q", bytes.Join(parts, nil), err, msg)
		}
		tab.Release(refs...)
		// Lifted from parts, the same message (but for the ids) and the
		// same bytes back.
		for _, n := range []int{1, 3, 64} {
			pt := New(4)
			fromParts, prefs := pt.LiftParts(splits(msg, n), under...)
			if got := bytes.ReplaceAll(fromParts, []byte(pt.marker), []byte(tab.marker)); !bytes.Equal(got, lifted) {
				t.Fatalf("LiftParts(msg in parts of %d) = %q, want %q\nmsg %q", n, got, lifted, msg)
			}
			if parts, err := pt.Lower(fromParts); err != nil || !bytes.Equal(bytes.Join(parts, nil), msg) {
				t.Fatalf("Lower(LiftParts(msg in parts of %d)) = %q, %v; want msg %q", n, bytes.Join(parts, nil), err, msg)
			}
			pt.Release(prefs...)
		}
		if !json.Valid(msg) {
			return
		}
		roundTrip(t, tab, msg, under...)
		if n := tab.Len(); n != 0 {
			t.Fatalf("Len() = %d after Release", n)
		}
	})
}

// big8MiB is a tools/call request with one 8 MiB argument.
func big8MiB() []byte {
	return []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"mode":"plain","text":"` +
		strings.Repeat("lorem ipsum dolor sit amet, \u00e9 ", 8<<20/30) + `"}}}`)
}

func BenchmarkLift8MiB(b *testing.B) {
	tab := New(DefaultMin)
	msg := big8MiB()
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		_, refs := tab.Lift(msg, "params", "arguments")
		if len(refs) != 1 {
			b.Fatalf("lifted %d", len(refs))
		}
		tab.Release(refs...)
	}
}

func BenchmarkLower8MiB(b *testing.B) {
	tab := New(DefaultMin)
	msg := big8MiB()
	lifted, refs := tab.Lift(msg, "params", "arguments")
	if len(refs) != 1 {
		b.Fatalf("lifted %d", len(refs))
	}
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tab.Lower(lifted); err != nil {
			b.Fatal(err)
		}
	}
}

// A message nested deeper than encoding/json accepts is not valid JSON:
// Lift lifts nothing from it, and it does not keep a stack as long as the
// message (a caller's 16 MiB line of "[" cost 2.3 GB and 10 s).
func TestLiftDeepNestingIsCheap(t *testing.T) {
	tab := New(64)
	big := `"` + strings.Repeat("d", 100) + `"`
	nest := func(depth int) []byte {
		return []byte(`{"params":{"arguments":` + strings.Repeat("[", depth-2) + big + strings.Repeat("]", depth-2) + `}}`)
	}
	// At encoding/json's limit a message is valid and its string lifted;
	// one deeper it is neither.
	for _, c := range []struct {
		depth int
		valid bool
		refs  int
	}{{10000, true, 1}, {10001, false, 0}} {
		msg := nest(c.depth)
		lifted, refs := tab.Lift(msg, "params", "arguments")
		if json.Valid(msg) != c.valid || json.Valid(lifted) != c.valid || len(refs) != c.refs {
			t.Errorf("depth %d: Valid(msg) %v, Valid(lifted) %v, %d refs; want %v, %d refs",
				c.depth, json.Valid(msg), json.Valid(lifted), len(refs), c.valid, c.refs)
		}
		tab.Release(refs...)
	}

	msg := append([]byte(`{"params":{"arguments":`), bytes.Repeat([]byte("["), 1<<20)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	lifted, refs := tab.Lift(msg, "params", "arguments")
	runtime.ReadMemStats(&after)
	if refs != nil || &lifted[0] != &msg[0] {
		t.Errorf("Lift of a 1 MiB line of %q: %d refs, want msg itself", "[", len(refs))
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > uint64(len(msg)) {
		t.Errorf("Lift of a 1 MiB line of %q allocated %d bytes", "[", n)
	}
}

// A line read in 64 KiB pieces is lifted from the pieces: the literal is
// kept as sub-slices of them, not gathered into a copy.
func TestLiftPartsKeepsThePieces(t *testing.T) {
	tab := New(DefaultMin)
	msg := big8MiB()
	parts := splits(msg, 64<<10)
	lifted, refs := tab.LiftParts(parts, "params", "arguments")
	if len(refs) != 1 {
		t.Fatalf("lifted %d literals, want 1", len(refs))
	}
	defer tab.Release(refs...)
	if len(lifted) > 200 {
		t.Fatalf("lifted message of %d bytes", len(lifted))
	}
	tab.mu.Lock()
	lit := tab.entries[refs[0]]
	tab.mu.Unlock()
	if len(lit) < len(parts)-1 {
		t.Fatalf("the literal is %d pieces, want one per part it spans (%d parts)", len(lit), len(parts))
	}
	for k, p := range lit[1:] {
		if &p[0] != &parts[k+1][0] {
			t.Fatalf("piece %d is not part %d's own bytes", k+1, k+1)
		}
	}
	got, err := tab.Lower(lifted)
	if err != nil || !bytes.Equal(bytes.Join(got, nil), msg) {
		t.Fatalf("Lower: %v, or not the message", err)
	}
}

// A character, an escape or a backslash before a quote cut by a part's end
// is read as if the parts were one: every cut of these literals lifts (or
// refuses) as the whole does.
func TestLiftPartsAcrossCuts(t *testing.T) {
	for _, body := range []string{
		`aé€😀b`,             // two-, three- and four-byte characters
		`a\u00e9\n\"\\b`,    // escapes
		`a\\\"b\\`,          // backslash runs before quotes
		"a\xe2\x82b",        // a character cut short: not lifted
		`a\ud83d\ude00b`,    // an escaped pair
		`a\ud83d b`,         // an escaped surrogate alone: not lifted
		"a\x01b",            // a raw control character: not lifted
		`a\u12G4b`,          // a bad escape: not lifted
		`\u00e9\u00e9\u00e`, // an escape cut short by the end: not JSON
	} {
		msg := []byte(`{"params":{"arguments":{"k":"` + body + `"}}}`)
		whole, wrefs := New(4).Lift(msg, "params", "arguments")
		for cut := 1; cut < len(msg); cut++ {
			tab := New(4)
			lifted, refs := tab.LiftParts([][]byte{msg[:cut], msg[cut:]}, "params", "arguments")
			if len(refs) != len(wrefs) || len(lifted) != len(whole) {
				t.Fatalf("%q cut at %d: %d refs, %q; whole: %d refs, %q", msg, cut, len(refs), lifted, len(wrefs), whole)
			}
			if parts, err := tab.Lower(lifted); err != nil || !bytes.Equal(bytes.Join(parts, nil), msg) {
				t.Fatalf("%q cut at %d: Lower = %q, %v", msg, cut, bytes.Join(parts, nil), err)
			}
		}
	}
}

func BenchmarkLiftParts8MiB(b *testing.B) {
	tab := New(DefaultMin)
	msg := big8MiB()
	parts := splits(msg, 64<<10)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		_, refs := tab.LiftParts(parts, "params", "arguments")
		if len(refs) != 1 {
			b.Fatalf("lifted %d", len(refs))
		}
		tab.Release(refs...)
	}
}

// The table counts the bytes it holds.
func TestHeld(t *testing.T) {
	tab := New(100)
	lit := func(n int) []byte { return []byte(`{"a":"` + x(n-2) + `"}`) }
	_, r1 := tab.Lift(lit(300))
	if tab.Held() != 300 {
		t.Fatalf("one 300-byte literal: held %d", tab.Held())
	}
	_, r2 := tab.LiftParts(splits(lit(300), 7))
	_, r3 := tab.Lift(lit(300))
	if tab.Held() != 900 {
		t.Fatalf("three: held %d; want 900", tab.Held())
	}
	tab.Release(r1...)
	tab.Release(r1...) // again: nothing
	if tab.Held() != 600 {
		t.Fatalf("two left: held %d", tab.Held())
	}
	tab.Release(r2...)
	tab.Release(r3...)
	if tab.Held() != 0 || tab.Len() != 0 {
		t.Fatalf("none left: held %d, %d entries", tab.Held(), tab.Len())
	}
}

// Typed turns each reference of a decoded value into a Lifted, which gives
// its text and is no string; Untyped turns it back into the reference, and
// Resolve into its text. The value Typed was given is not modified.
func TestTypedLifted(t *testing.T) {
	table := New(DefaultMin)
	long := strings.Repeat("y", 2*DefaultMin)
	msg, _ := json.Marshal(map[string]any{"params": map[string]any{"arguments": map[string]any{"a": []any{long, "short"}}}})
	lifted, refs := table.Lift(msg, "params", "arguments")
	if len(refs) != 1 {
		t.Fatalf("lifted %d strings, want 1", len(refs))
	}
	var call struct {
		Params struct {
			Arguments map[string]any `json:"arguments"`
		} `json:"params"`
	}
	if err := json.Unmarshal(lifted, &call); err != nil {
		t.Fatal(err)
	}
	decoded := call.Params.Arguments
	ref := decoded["a"].([]any)[0].(string)
	typed := table.Typed(decoded).(map[string]any)
	l, ok := typed["a"].([]any)[0].(Lifted)
	if !ok {
		t.Fatalf("Typed: %T, want Lifted", typed["a"].([]any)[0])
	}
	if _, isString := any(l).(string); isString || typed["a"].([]any)[1] != "short" {
		t.Fatalf("Typed: %v", typed)
	}
	if s, ok := l.Text(); !ok || s != long || l.Size() != len(long)+2 {
		t.Errorf("Text: %d bytes, %v; Size %d", len(s), ok, l.Size())
	}
	if decoded["a"].([]any)[0] != ref {
		t.Error("Typed modified the value it was given")
	}
	if back := Untyped(typed).(map[string]any); back["a"].([]any)[0] != ref {
		t.Errorf("Untyped: %v, want the reference", back["a"].([]any)[0])
	}
	if r := table.Resolve(typed).(map[string]any); r["a"].([]any)[0] != long {
		t.Error("Resolve of a Lifted is not its text")
	}
	table.Release(refs...)
	if s, ok := l.Text(); ok || s != "" {
		t.Errorf("Text after Release: %d bytes, %v; want none", len(s), ok)
	}
}

// A Hold keeps an owner's strings past its other holders (a call that
// outlives its request: a 2026-07-28 caller's continuation), until it is
// released, once; a let-go owner takes no hold.
func TestOwnerHold(t *testing.T) {
	tab, ended := ownedTable()
	_, refs := tab.Lift([]byte(`{"params":{"arguments":{"a":"`+x(20)+`"}}}`), "params", "arguments")
	o := tab.Own(refs)
	release := o.Hold()
	o.Done() // the face lets go
	if !o.Live() || tab.Len() != 1 {
		t.Fatalf("held, yet live %v, Len() = %d", o.Live(), tab.Len())
	}
	release()
	waitEnded(t, ended)
	release() // again: nothing
	if o.Live() || tab.Len() != 0 || holdsOf(o) != 0 {
		t.Fatalf("released, yet live %v, Len() = %d, holds %d", o.Live(), tab.Len(), holdsOf(o))
	}
	o.Hold()() // let go already: no hold taken
	if holdsOf(o) != 0 {
		t.Fatalf("a hold on a let-go owner: %d", holdsOf(o))
	}
	var none *Owner
	none.Hold()()
}
