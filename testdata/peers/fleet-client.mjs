// make fleet's TypeScript client (@modelcontextprotocol/client v2): N calls
// of the demo server's echo through colibri's load balancer, in the
// protocol version asked for — 2025-11-25 (a session, kept on its instance
// by Mcp-Session-Id) or 2026-07-28 (stateless, any instance) — in
// CONCURRENCY parallel lanes, each its own client.
//
//   node fleet-client.mjs URL 2025-11-25|2026-07-28 N CONCURRENCY
//
// Prints one JSON line: {"version", "ok", "failed", "errors": [first few]}.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [url, version, nArg, lanesArg] = process.argv.slice(2);
const n = Number(nArg);
const lanes = Number(lanesArg);
const mode = version === "2026-07-28" ? { pin: "2026-07-28" } : "legacy";
let ok = 0;
let failed = 0;
const errors = [];

async function lane(count) {
  const client = new Client({ name: "fleet-ts", version: "1.0.0" }, { versionNegotiation: { mode } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  for (let i = 0; i < count; i++) {
    try {
      const res = await client.callTool({
        name: "colibri_external_mcp_call_tool",
        arguments: { server: "demo", name: "echo", arguments: { message: `ts-${version}-${i}` } },
      });
      const text = (res.content || []).map((c) => c.text || "").join("");
      if (res.isError || !text.includes(`ts-${version}-${i}`)) {
        failed++;
        if (errors.length < 5) errors.push(text.slice(0, 300));
      } else {
        ok++;
      }
    } catch (e) {
      failed++;
      if (errors.length < 5) errors.push(String(e).slice(0, 300));
    }
  }
  await client.close();
}

const per = Math.floor(n / lanes);
await Promise.all(Array.from({ length: lanes }, (_, i) => lane(i === 0 ? n - per * (lanes - 1) : per)));
console.log(JSON.stringify({ version, ok, failed, errors }));
