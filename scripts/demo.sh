#!/bin/sh
# Drives the built colibri-mcp through servers → list-tools → call on the
# example registry, printing each command exactly as it ran, so that it can
# be pasted into a shell (from the repository's root). Run by `make demo`.
set -u
cd "$(dirname "$0")/.." || exit 1
REG=examples/external-mcp.json

# Bold only for a person: not into a pipe or a file, nor with NO_COLOR set
# (https://no-color.org).
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
	bold=$(printf '\033[1m') plain=$(printf '\033[0m')
else
	bold='' plain=''
fi

# quote prints one argument as a shell reads it back.
quote() {
	case $1 in
	*[!A-Za-z0-9_./:=@%+-]*|'') printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")" ;;
	*) printf '%s' "$1" ;;
	esac
}

# run shows the command line, then runs it.
run() {
	line=''
	for a in "$@"; do
		line="$line $(quote "$a")"
	done
	printf '\n%s$%s%s\n' "$bold" "$line" "$plain"
	"$@"
}

# A pin file of the demo's own: a demo run must not change what the
# machine's colibri trusts (the default is ~/.local/state/colibri-mcp/pins.json,
# /var/db/colibri/pins.json as root).
PINS=$(mktemp -d "${TMPDIR:-/tmp}/colibri-demo-pins.XXXXXX") || exit 1
trap 'rm -rf "$PINS"' EXIT
COLIBRI_MCP_PIN_FILE=$PINS/pins.json
export COLIBRI_MCP_PIN_FILE

C=bin/colibri-mcp
run $C --external-config $REG servers
run $C --external-config $REG list-tools demo
run $C --external-config $REG describe demo add
run $C --external-config $REG call demo echo --args '{"message":"hello from colibri"}'
printf '(exit %s: the call gate is off)\n' "$?"
run $C --external-config $REG --external-call call demo echo --args '{"message":"hello from colibri"}'
run $C --external-config $REG --external-call call demo add --args '{"a":2,"b":40}' --output structured
run $C --external-config $REG --external-call call demo add --args '{"a":"two"}'
printf '(exit %s: checked against the tool'"'"'s inputSchema before the call)\n' "$?"
run $C --external-config $REG --external-call call demo fail --args '{"reason":"the tool said no"}'
printf '(exit %s: the hosted tool returned isError)\n' "$?"
run $C --external-config $REG check --probe
run $C --external-config $REG pins
exit 0
