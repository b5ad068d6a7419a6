package mcpregistry

import (
	"regexp"
	"strings"
)

// What a name or version taken from a registry must look like before it
// reaches an argv: each is data for npx or uvx, never an option of theirs.
var (
	// npm's package name rules: lower case, URL-safe, at most 214
	// characters, an optional @scope/.
	npmName = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$`)
	// semver 2.0.0, exactly one version: no range, tag, "v" or wildcard.
	semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
		`(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?` +
		`(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$`)
	// PEP 508 project names.
	pypiName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)
	// PEP 440 public versions in their normal form: one exact release
	// (epoch, release, pre, post, dev), no specifier, no local part
	// (PyPI takes none).
	pep440 = regexp.MustCompile(`^([1-9][0-9]*!)?(0|[1-9][0-9]*)(\.(0|[1-9][0-9]*))*` +
		`((a|b|rc)(0|[1-9][0-9]*))?(\.post(0|[1-9][0-9]*))?(\.dev(0|[1-9][0-9]*))?$`)
	// A server's own version, for "source": one word, no range.
	serverVersion = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+_-]{0,254}$`)
	// An environment variable's name, as the registry's env keys are.
	envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// A header's name (RFC 9110 token).
	headerName = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
	// A named argument's flag.
	flagName = regexp.MustCompile(`^--?[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// NPMName reports whether s is an npm package name.
func NPMName(s string) bool { return len(s) <= 214 && npmName.MatchString(s) }

// SemVer reports whether s is one exact semver version.
func SemVer(s string) bool { return len(s) <= 255 && semver.MatchString(s) }

// PyPIName reports whether s is a PyPI project name.
func PyPIName(s string) bool { return len(s) <= 200 && pypiName.MatchString(s) }

// PEP440 reports whether s is one exact PEP 440 version in normal form.
func PEP440(s string) bool { return len(s) <= 255 && pep440.MatchString(s) }

// runsDifferently are variables that change how a program runs, or what it
// trusts, rather than what it does: a registry entry may not set them.
var runsDifferently = []string{
	"PATH", "HOME", "SHELL", "IFS", "ENV", "BASH_ENV", "SHELLOPTS", "BASHOPTS", "PS4", "CDPATH", "TMPDIR",
	"NODE_OPTIONS", "NODE_PATH", "NODE_EXTRA_CA_CERTS", "NODE_TLS_REJECT_UNAUTHORIZED", "NODE_REPL_EXTERNAL_MODULE",
	"PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONINSPECT", "PYTHONUSERBASE", "PYTHONSAFEPATH", "PYTHONEXECUTABLE",
	"PERL5LIB", "PERL5OPT", "PERLLIB", "RUBYOPT", "RUBYLIB", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH",
	"GCONV_PATH", "LOCPATH", "NLSPATH", "HOSTALIASES", "RESOLV_HOST_CONF", "TZDIR",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
	"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy",
}

// runsDifferentlyPrefixes are families of them: the loader's, npm's, uv's
// and pip's configuration, git's, and colibri's own.
var runsDifferentlyPrefixes = []string{"LD_", "DYLD_", "NPM_CONFIG_", "UV_", "PIP_", "GIT_", "MALLOC_", "GLIBC_", "COLIBRI_"}

// RunsDifferently reports whether the variable name changes how a program
// runs (PATH, NODE_OPTIONS, LD_PRELOAD, npm_config_*, …): refused from a
// registry.
func RunsDifferently(name string) bool {
	for _, n := range runsDifferently {
		if strings.EqualFold(name, n) {
			return true
		}
	}
	up := strings.ToUpper(name)
	for _, p := range runsDifferentlyPrefixes {
		if strings.HasPrefix(up, p) {
			return true
		}
	}
	return false
}
