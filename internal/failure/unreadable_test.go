package failure

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestDescribe(t *testing.T) {
	var v struct {
		N float64  `json:"n"`
		L []string `json:"l"`
	}
	err := json.Unmarshal([]byte(`{"n":1e400}`), &v)
	msg, number, ok := DescribeUnreadable(fmt.Errorf("calling: %w", err))
	if !ok || !number || !strings.Contains(msg, "1e400") || strings.Contains(msg, "float64") {
		t.Errorf("1e400: %q, %v, %v", msg, number, ok)
	}
	err = json.Unmarshal([]byte(`{"l":"x"}`), &v)
	msg, number, ok = DescribeUnreadable(err)
	if !ok || number || !strings.Contains(msg, "an array") || strings.Contains(msg, "[]string") {
		t.Errorf("a string for a list: %q, %v, %v", msg, number, ok)
	}
	if _, _, ok := DescribeUnreadable(fmt.Errorf("other")); ok {
		t.Error("an unrelated error described")
	}
}
