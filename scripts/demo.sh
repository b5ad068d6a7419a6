#!/bin/sh
# Drives the built colibri-mcp through servers → list-tools → call on the
# example registry, printing what a user would see. Run by `make demo`.
set -u
cd "$(dirname "$0")/.." || exit 1
C="bin/colibri-mcp --external-config examples/external-mcp.json"

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

step colibri-mcp servers
$C servers
step colibri-mcp list-tools demo
$C list-tools demo
step colibri-mcp call demo echo --args '{"message":"hello from colibri"}'
$C call demo echo --args '{"message":"hello from colibri"}'
printf '(exit %s: the call gate is off)\n' "$?"
step colibri-mcp --external-call call demo echo --args '{"message":"hello from colibri"}'
$C --external-call call demo echo --args '{"message":"hello from colibri"}'
step colibri-mcp --external-call call demo add --args '{"a":2,"b":40}' --json
$C --external-call call demo add --args '{"a":2,"b":40}' --json
step colibri-mcp --external-call call demo add --args '{"a":"two"}'
$C --external-call call demo add --args '{"a":"two"}'
printf '(exit %s: checked against the tool'"'"'s inputSchema before the call)\n' "$?"
step colibri-mcp --external-call call demo fail --args '{"reason":"the tool said no"}'
$C --external-call call demo fail --args '{"reason":"the tool said no"}'
printf '(exit %s: the hosted tool returned isError)\n' "$?"
step colibri-mcp check --probe
$C check --probe
exit 0
