package remote

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// Headers and the bearer token go only to the registry url's origin: a
// request elsewhere (an SSE endpoint event naming another host) carries
// none of them.
func TestCredentialsOnlyToTheOrigin(t *testing.T) {
	got := make(chan http.Header, 2)
	record := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Clone() })
	home, other := httptest.NewServer(record), httptest.NewServer(record)
	defer home.Close()
	defer other.Close()
	c := New(Options{URL: home.URL + "/mcp", Headers: map[string]string{"X-Api-Key": "k"}, Bearer: "b"})
	defer c.Close()
	for _, u := range []string{home.URL + "/messages", other.URL + "/messages"} {
		resp, err := c.Client().Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if h := <-got; h.Get("X-Api-Key") != "k" || h.Get("Authorization") != "Bearer b" {
		t.Errorf("the origin got %v; want X-Api-Key and Authorization", h)
	}
	if h := <-got; h.Get("X-Api-Key") != "" || h.Get("Authorization") != "" {
		t.Errorf("another host got %v; want neither header", h)
	}
}
