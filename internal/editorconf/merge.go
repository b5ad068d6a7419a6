package editorconf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Document is a registry document holding entries, in their order:
// {"servers": {NAME: ENTRY, …}}, indented by two spaces, with a final
// newline.
func Document(entries []*Entry) []byte {
	out, _, _, _ := Merge(nil, entries)
	return out
}

// Merge adds entries to the registry document existing (nil or empty for
// none) and returns the new document. A name the registry has already is
// kept as it is, never overwritten: it is listed in kept, the others in
// added. Everything else of the existing document is kept too, in its order;
// only its spacing changes (two-space indents). existing must be a JSON
// object whose "servers", if present, is an object.
func Merge(existing []byte, entries []*Entry) (out []byte, added, kept []string, err error) {
	var top []member
	if len(bytes.TrimSpace(existing)) > 0 {
		if top, err = members(existing); err != nil {
			return nil, nil, nil, fmt.Errorf("reading the registry: %w", err)
		}
	}
	i := slices.IndexFunc(top, func(m member) bool { return m.key == "servers" })
	if i < 0 {
		top = append(top, member{key: "servers", value: json.RawMessage("{}")})
		i = len(top) - 1
	}
	servers, err := members(top[i].value)
	if err != nil {
		return nil, nil, nil, fmt.Errorf(`reading the registry's "servers": %w`, err)
	}
	for _, e := range entries {
		if slices.ContainsFunc(servers, func(m member) bool { return m.key == e.Name }) {
			kept = append(kept, e.Name)
			continue
		}
		servers = append(servers, member{key: e.Name, value: marshal(e)})
		added = append(added, e.Name)
	}
	top[i].value = writeObject(servers, "  ")

	var b bytes.Buffer
	b.Write(writeObject(top, ""))
	b.WriteByte('\n')
	return b.Bytes(), added, kept, nil
}

// member is one name and value of a JSON object, in the file's order.
type member struct {
	key   string
	value json.RawMessage
}

// members reads a JSON object's members in order.
func members(data []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var ms []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		ms = append(ms, member{key, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more after the end of the object")
	}
	return ms, nil
}

// writeObject writes members as an indented JSON object whose closing brace is
// at indent prefix.
func writeObject(ms []member, prefix string) json.RawMessage {
	if len(ms) == 0 {
		return json.RawMessage("{}")
	}
	var b bytes.Buffer
	b.WriteString("{\n")
	for i, m := range ms {
		b.WriteString(prefix + "  ")
		b.Write(jsonString(m.key))
		b.WriteString(": ")
		if err := json.Indent(&b, m.value, prefix+"  ", "  "); err != nil {
			b.Write(m.value) // not reached: the value came from a decoder
		}
		if i < len(ms)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString(prefix + "}")
	return b.Bytes()
}

// jsonString is s as a JSON string, with <, > and & as they are.
func jsonString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimRight(b.Bytes(), "\n")
}

func marshal(e *Entry) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(e)
	return bytes.TrimRight(b.Bytes(), "\n")
}

// JSON is the entry as the registry holds it, indented by two spaces.
func (e *Entry) JSON() []byte {
	var b bytes.Buffer
	_ = json.Indent(&b, marshal(e), "", "  ")
	return b.Bytes()
}

// Preview is JSON with the secrets that stay in the entry hidden: an
// argument that follows a secret-looking flag, a URL's password or
// secret-looking query value (in args or url). They are noted, and written
// to the registry as they are; only what import prints for a person to read
// leaves them out.
func (e *Entry) Preview() []byte {
	if len(e.hidden) == 0 {
		return e.JSON()
	}
	cp := *e
	cp.Args = slices.Clone(e.Args)
	for loc, shown := range e.hidden {
		if loc == "url" {
			cp.URL = shown
			continue
		}
		var i int
		if _, err := fmt.Sscanf(loc, "args/%d", &i); err == nil && i < len(cp.Args) {
			cp.Args[i] = shown
		}
	}
	return cp.JSON()
}

// hide shows a secret that stays at loc ("args/3", "url") as shown in the
// preview.
func (e *Entry) hide(loc, shown string) {
	if e.hidden == nil {
		e.hidden = map[string]string{}
	}
	e.hidden[loc] = shown
}
