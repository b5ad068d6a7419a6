package clihelp

import (
	"runtime/debug"
	"testing"
)

// --version comes from the build info when the Makefile did not stamp it.
func TestBuildVersion(t *testing.T) {
	info := func(v string, settings ...debug.BuildSetting) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			return &debug.BuildInfo{Main: debug.Module{Version: v}, Settings: settings}, true
		}
	}
	rev := debug.BuildSetting{Key: "vcs.revision", Value: "0123456789abcdef0123"}
	dirty := debug.BuildSetting{Key: "vcs.modified", Value: "true"}
	for _, tc := range []struct {
		version, commit string
		read            func() (*debug.BuildInfo, bool)
		want            [2]string
	}{
		{"v1.2.3", "abc", info("v9"), [2]string{"v1.2.3", "abc"}},          // stamped: kept
		{"dev", "unknown", info("v0.4.0"), [2]string{"v0.4.0", "unknown"}}, // go install …@v0.4.0
		{"dev", "unknown", info("(devel)", rev), [2]string{"dev", "0123456789ab"}},
		{"dev", "unknown", info("(devel)", rev, dirty), [2]string{"dev", "0123456789ab-dirty"}},
		{"dev", "unknown", func() (*debug.BuildInfo, bool) { return nil, false }, [2]string{"dev", "unknown"}},
	} {
		v, c := BuildVersion(tc.version, tc.commit, tc.read)
		if [2]string{v, c} != tc.want {
			t.Errorf("BuildVersion(%q, %q) = %q, %q; want %q", tc.version, tc.commit, v, c, tc.want)
		}
	}
}
