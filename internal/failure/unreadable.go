// DescribeUnreadable says, in a user's words, why a hosted server's message
// could not be decoded: which JSON value, where, and what was expected,
// without the Go type names of the decoder's own error (a model reading
// "Go struct field mcp.wireContent of type float64" learns nothing).
//
//	if msg, number, ok := DescribeUnreadable(err); ok { … }

package failure

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// DescribeUnreadable reports whether err is a value the decoder could not read, and
// if so says which (msg) and whether it was a number beyond what a 64-bit
// integer or float holds (number).
func DescribeUnreadable(err error) (msg string, number, ok bool) {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return "", false, false
	}
	value := Clip(strings.Trim(strings.TrimSuffix(strings.TrimPrefix(te.Value, "number "), " overflows"), `"`), 40)
	where := ""
	if te.Field != "" {
		where = " at " + ClipName(te.Field)
	}
	want := jsonType(te.Type)
	if want == "number" && looksNumeric(value) {
		return fmt.Sprintf("the server sent the number %s%s, beyond what colibri can hold (a 64-bit number)", value, where), true, true
	}
	return fmt.Sprintf("the server sent %s%s where %s was expected", Clip(te.Value, 40), where, article(want)), false, true
}

func looksNumeric(s string) bool {
	return s != "" && strings.Trim(s, "0123456789+-.eE") == "" && strings.ContainsAny(s, "0123456789")
}

func jsonType(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.Float32, reflect.Float64, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "number"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map, reflect.Struct, reflect.Pointer, reflect.Interface:
		return "object"
	}
	return "a value"
}

func article(t string) string {
	switch t {
	case "a value":
		return t
	case "array", "object":
		return "an " + t
	}
	return "a " + t
}
