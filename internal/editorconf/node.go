package editorconf

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
)

// node is a decoded JSON or TOML value and where it is in its file, so that
// a value of the wrong type is reported at its place. Messages name the
// type found, never the value: it may be a secret.
type node struct {
	v    any
	at   string // a JSON Pointer, or a TOML key path
	toml bool
}

func (n node) child(key string) node {
	if n.toml {
		k := key
		if !bareTOMLKey(k) {
			k = fmt.Sprintf("%q", k)
		}
		if n.at == "" {
			return node{nil, k, true}
		}
		return node{nil, n.at + "." + k, true}
	}
	return node{nil, n.at + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(key), false}
}

func (n node) index(i int) node {
	if n.toml {
		return node{nil, fmt.Sprintf("%s[%d]", n.at, i), true}
	}
	return node{nil, fmt.Sprintf("%s/%d", n.at, i), false}
}

func bareTOMLKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func (n node) wrong(want string) error {
	return &Error{Location: n.at, Message: fmt.Sprintf("want %s, got %s", want, typeName(n.v, n.toml))}
}

func typeName(v any, toml bool) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "true or false"
	case json.Number, int64, float64, int:
		return "a number"
	case []any:
		if toml {
			return "an array"
		}
		return "a list"
	case map[string]any:
		if toml {
			return "a table"
		}
		return "an object"
	case []map[string]any:
		return "an array of tables"
	case time.Time:
		return "a date or time"
	}
	return "a value of another type" // never a Go type: the reader wrote TOML or JSON
}

// object is an object (a table, in TOML) with its members' locations.
type object struct {
	node
	m map[string]any
}

func (n node) object() (object, error) {
	m, ok := n.v.(map[string]any)
	if !ok {
		if n.toml {
			return object{}, n.wrong("a table")
		}
		return object{}, n.wrong("an object")
	}
	return object{n, m}, nil
}

// get is the member key; a missing member and a JSON null are both absent.
func (o object) get(key string) (node, bool) {
	v, ok := o.m[key]
	if !ok || v == nil {
		return node{}, false
	}
	n := o.child(key)
	n.v = v
	return n, true
}

func (o object) has(key string) bool {
	_, ok := o.get(key)
	return ok
}

func (o object) str(key string) (string, error) {
	n, ok := o.get(key)
	if !ok {
		return "", nil
	}
	s, ok := n.v.(string)
	if !ok {
		return "", n.wrong("a string")
	}
	return s, nil
}

func (o object) boolean(key string) (value, set bool, err error) {
	n, ok := o.get(key)
	if !ok {
		return false, false, nil
	}
	b, ok := n.v.(bool)
	if !ok {
		return false, false, n.wrong("true or false")
	}
	return b, true, nil
}

func (o object) strings(key string) ([]string, error) {
	n, ok := o.get(key)
	if !ok {
		return nil, nil
	}
	return n.strings()
}

func (n node) strings() ([]string, error) {
	list, ok := n.v.([]any)
	if !ok {
		if n.toml {
			return nil, n.wrong("an array of strings")
		}
		return nil, n.wrong("a list of strings")
	}
	out := make([]string, len(list))
	for i, v := range list {
		s, ok := v.(string)
		if !ok {
			el := n.index(i)
			el.v = v
			return nil, el.wrong("a string")
		}
		out[i] = s
	}
	return out, nil
}

func (o object) stringMap(key string) (map[string]string, error) {
	n, ok := o.get(key)
	if !ok {
		return nil, nil
	}
	obj, err := n.object()
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(obj.m))
	for k, v := range obj.m {
		s, ok := v.(string)
		if !ok {
			el := obj.child(k)
			el.v = v
			return nil, el.wrong("a string")
		}
		out[k] = s
	}
	return out, nil
}

// number reads a number member as a float64.
func (o object) number(key string) (float64, bool, error) {
	n, ok := o.get(key)
	if !ok {
		return 0, false, nil
	}
	switch v := n.v.(type) {
	case json.Number:
		f, err := v.Float64()
		if err != nil || math.IsInf(f, 0) {
			return 0, false, n.wrong("a number in range")
		}
		return f, true, nil
	case int64:
		return float64(v), true, nil
	case float64:
		return v, true, nil
	}
	return 0, false, n.wrong("a number")
}
