package metrics

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// Refusals are counted by a fixed set of reasons; anything else is _other,
// so a caller cannot grow the series. Sessions and the registry's state are
// what the wiring sets.
func TestRefusedSessionsRegistry(t *testing.T) {
	m := New(Options{})
	m.HTTPRefused("401")
	m.HTTPRefused("401")
	m.HTTPRefused("session_cap")
	m.HTTPRefused("made-up")
	m.SetSessions(func() int { return 3 })
	m.RegistryValid(true)
	m.RegistryError()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	got := rec.Body.String()
	for _, want := range []string{`colibri_http_refused_total{reason="401"} 2`, `colibri_http_refused_total{reason="session_cap"} 1`,
		`colibri_http_refused_total{reason="_other"} 1`, "colibri_http_sessions 3", "colibri_registry_valid 1", "colibri_registry_errors_total 1"} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("the scrape lacks %s", want)
		}
	}
	var nilM *Metrics
	nilM.HTTPRefused("401")
	nilM.RegistryValid(false)
	nilM.RegistryError()
	nilM.SetSessions(nil)
}
