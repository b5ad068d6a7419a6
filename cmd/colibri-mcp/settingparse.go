// parseDuration, parsePositive, parseBool and lookupIn read the values of
// colibri's settings in the syntax docs/registry.md#settings gives them, whether a flag or a variable
// holds them: a duration is integer milliseconds or a Go duration, positive;
// a count is a positive integer; a switch is 1, true or yes, or 0, false, no
// or empty (anything else is refused, never a silent off); and an
// environment is read as os.LookupEnv reads the process's.
//
//	d, err := parseDuration("45s")      // also "45000"
//	on, err := parseBool("COLIBRI_MCP_AGGREGATE", "yes")
//	v, ok := lookupIn(environ)("HOME")

package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// parseDuration reads the contract's duration syntax: a bare integer is
// milliseconds, anything else a Go duration; it must be positive.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var d time.Duration
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n > math.MaxInt64/int64(time.Millisecond) {
			return 0, fmt.Errorf("%q: too large (at most %d ms)", s, math.MaxInt64/int64(time.Millisecond))
		}
		d = time.Duration(n) * time.Millisecond
	} else if d, err = time.ParseDuration(s); err != nil {
		return 0, fmt.Errorf("%q is neither integer milliseconds nor a Go duration such as 45s", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q: must be positive", s)
	}
	return d, nil
}

// parsePositive reads a positive integer.
func parsePositive[T int | int64](s string) (T, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q: must be a positive integer", s)
	}
	return T(n), nil
}

// parseBool reads a boolean variable the contract's way: on for 1, true or
// yes; off for 0, false, no or empty; anything else ("on", "enabled") is a
// configuration error rather than a silent off.
func parseBool(variable, value string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "1", "true", "yes":
		return true, nil
	case "0", "false", "no", "":
		return false, nil
	}
	return false, fmt.Errorf("%s=%s: not understood: use 1, true or yes to turn it on; 0, false, no or empty to turn it off", variable, value)
}

// lookupIn reads environ (NAME=value entries, the last of a name winning) as
// os.LookupEnv reads the process's.
func lookupIn(environ []string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for i := len(environ) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(environ[i], name+"="); ok {
				return v, true
			}
		}
		return "", false
	}
}
