package main

import (
	"strings"
	"testing"
)

// The gate's variable, and every boolean variable: 1/true/yes on,
// 0/false/no/empty off, anything else a configuration error naming it.
func TestBool(t *testing.T) {
	for v, want := range map[string]bool{"1": true, "true": true, "yes": true, "TRUE": true, "0": false, "false": false, "no": false, "": false} {
		if got, err := parseBool("V", v); err != nil || got != want {
			t.Errorf("%q: %v, %v", v, got, err)
		}
	}
	for _, v := range []string{"on", "off", "2", "y"} {
		if _, err := parseBool("COLIBRI_MCP_AGGREGATE", v); err == nil || !strings.Contains(err.Error(), "COLIBRI_MCP_AGGREGATE="+v) {
			t.Errorf("%q: %v, want an error naming the variable and value", v, err)
		}
	}
}
