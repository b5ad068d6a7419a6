#!/bin/sh
# colibri-mcp as the client of one @modelcontextprotocol/conformance client
# scenario (make conformance): the suite runs this with the scenario's server
# URL as the last argument and MCP_CONFORMANCE_SCENARIO set. colibri hosts the
# URL as a registry entry and does what the scenario asks of a client,
# through its command line.
set -eu
for url in "$@"; do :; done
bin=${COLIBRI_BIN:-bin/colibri-mcp}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '{"servers": {"s": {"url": "%s", "timeout_ms": 20000}}}\n' "$url" >"$dir/external-mcp.json"
# A pin file of its own: a run must not change what the machine trusts.
run() { "$bin" --external-config "$dir/external-mcp.json" --pin-file "$dir/pins.json" --external-call "$@"; }
case "${MCP_CONFORMANCE_SCENARIO:-}" in
tools_call) run call s add_numbers --args '{"a": 2, "b": 3}' ;;
sse-retry) run call s test_reconnection ;;
elicitation-sep1034-client-defaults) run call s test_client_elicitation_defaults ;;
*) run list-tools s ;;
esac
