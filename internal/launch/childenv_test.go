package launch

import (
	"slices"
	"testing"
)

// The child's environment (docs/registry.md#env-and-name): the few names, then
// pass_env, then the entry's env; nothing else, and never a secret-looking
// name through a glob.
func TestChildEnvPassEnv(t *testing.T) {
	environ := []string{"PATH=/bin", "HOME=/h", "HTTPS_PROXY=http://p:3128", "NO_PROXY=localhost",
		"npm_config_registry=https://r", "npm_config__authToken=s3cret", "npm_config__auth=dXNlcjpwYXNz", "npm_config_//r/:_password=cA==",
		"AWS_SECRET_ACCESS_KEY=k", "AWS_SESSION_TOKEN=t", "AWS_REGION=eu", "GOOGLE_APPLICATION_CREDENTIALS=/c.json", "gh_cookie=c", "github_token=t", "GITHUB_TOKEN=t", "EDITOR=vi", "LC_ALL=C"}
	for _, tc := range []struct {
		name string
		pass []string
		own  map[string]string
		want []string
	}{
		{"none", nil, nil, []string{"PATH=/bin", "HOME=/h", "LC_ALL=C"}},
		{"names", []string{"HTTPS_PROXY", "NO_PROXY"}, nil, []string{"PATH=/bin", "HOME=/h", "HTTPS_PROXY=http://p:3128", "NO_PROXY=localhost", "LC_ALL=C"}},
		{"glob skips a secret-looking name", []string{"npm_config_*"}, nil, []string{"PATH=/bin", "HOME=/h", "npm_config_registry=https://r", "LC_ALL=C"}},
		// npm's _auth (base64 user:password), cloud credentials, and names
		// in lower case are secrets too.
		{"glob skips auth, credentials, cookies", []string{"npm_config_*", "AWS_*", "GOOGLE_*", "gh_*", "github_*"}, nil, []string{"PATH=/bin", "HOME=/h", "npm_config_registry=https://r", "AWS_REGION=eu", "LC_ALL=C"}},
		{"env wins", []string{"HTTPS_PROXY"}, map[string]string{"HTTPS_PROXY": "http://q"}, []string{"PATH=/bin", "HOME=/h", "LC_ALL=C", "HTTPS_PROXY=http://q"}},
		{"unset name passes nothing", []string{"SSL_CERT_FILE"}, nil, []string{"PATH=/bin", "HOME=/h", "LC_ALL=C"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := childEnv(environ, tc.pass, tc.own); !slices.Equal(got, tc.want) {
				t.Errorf("childEnv = %q, want %q", got, tc.want)
			}
		})
	}
}
