#!/bin/sh
# colibri-mcp as the client of one @modelcontextprotocol/conformance client
# scenario (make conformance): the suite runs this with the scenario's server
# URL as the last argument and MCP_CONFORMANCE_SCENARIO set. colibri hosts the
# URL as a registry entry and does what the scenario asks of a client,
# through its command line.
#
# The auth/* scenarios protect the server with OAuth. Their authorization
# server approves at once (it redirects to the client's redirect URI without
# a sign-in page), so `auth login` completes without a browser; then colibri
# calls the server's tool as an operator would. Where a scenario hands the
# client credentials (MCP_CONFORMANCE_CONTEXT: client_id, client_secret), the
# entry is pre-registered with them; the client-credentials scenarios use the
# unattended client_credentials grant, with no login.
set -eu
for url in "$@"; do :; done
bin=${COLIBRI_BIN:-bin/colibri-mcp}
scenario=${MCP_CONFORMANCE_SCENARIO:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# ctx KEY: a string of the scenario's context (flat JSON of plain strings).
ctx() {
	printf '%s' "${MCP_CONFORMANCE_CONTEXT:-}" | sed -n 's/.*"'"$1"'" *: *"\([^"\\]*\)".*/\1/p'
}

# The registry expands ${NAME} in client_secret: the secret stays out of the file.
# shellcheck disable=SC2016
secret='${CONFORMANCE_CLIENT_SECRET}'
oauth=
case "$scenario" in
auth/client-credentials-*)
	CONFORMANCE_CLIENT_SECRET=$(ctx client_secret)
	export CONFORMANCE_CLIENT_SECRET
	oauth=$(printf ', "oauth": {"grant": "client_credentials", "client_id": "%s", "client_secret": "%s"}' "$(ctx client_id)" "$secret")
	;;
auth/basic-cimd)
	# colibri has no URL of its own: an operator publishes a Client ID
	# Metadata Document and gives its URL as client_id. This is the URL
	# the scenario expects.
	oauth=$(printf ', "oauth": {"grant": "authorization_code", "token_file": "%s", "client_id": "%s"}' "$dir/tokens.json" https://conformance-test.local/client-metadata.json)
	;;
auth/*)
	pre=
	if [ -n "$(ctx client_id)" ]; then
		CONFORMANCE_CLIENT_SECRET=$(ctx client_secret)
		export CONFORMANCE_CLIENT_SECRET
		pre=$(printf ', "client_id": "%s", "client_secret": "%s"' "$(ctx client_id)" "$secret")
	fi
	oauth=$(printf ', "oauth": {"grant": "authorization_code", "token_file": "%s"%s}' "$dir/tokens.json" "$pre")
	;;
esac
printf '{"servers": {"s": {"url": "%s", "timeout_ms": 20000%s}}}\n' "$url" "$oauth" >"$dir/external-mcp.json"
# A pin file of its own: a run must not change what the machine trusts.
colibri() { "$bin" --external-config "$dir/external-mcp.json" --pin-file "$dir/pins.json" "$@"; }
run() { colibri --external-call "$@"; }
case "$scenario" in
tools_call) run call s add_numbers --args '{"a": 2, "b": 3}' ;;
sse-retry) run call s test_reconnection ;;
elicitation-sep1034-client-defaults) run call s test_client_elicitation_defaults ;;
auth/client-credentials-*) run call s test-tool ;;
auth/*)
	colibri auth login s
	# A call that needs more scopes than the login got (403
	# insufficient_scope) fails "needs a login"; the operator logs in
	# again, once, and colibri asks for the scopes the 403 named.
	if ! run call s test-tool 2>"$dir/err"; then
		cat "$dir/err" >&2
		grep -q 'needs a login: run colibri-mcp auth login s' "$dir/err" || exit 1
		colibri auth login s
		run call s test-tool
	fi
	;;
*) run list-tools s ;;
esac
