// A client from another implementation: the official TypeScript SDK drives
// colibri-mcp, so that bugs shared by both ends of one SDK cannot hide.
//
//   node ts-client.mjs stdio COLIBRI_BIN REGISTRY
//   node ts-client.mjs http URL
//   node ts-client.mjs sse URL      (the 2024-11-05 HTTP+SSE transport, at /sse)
//
// Prints one JSON summary on stdout; exits 1 (with the reason on stderr) on
// the first failed expectation.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";

const [mode, ...rest] = process.argv.slice(2);

function fail(msg) {
  console.error("ts-client: " + msg);
  process.exit(1);
}

function text(result) {
  return (result.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");
}

const transport =
  mode === "stdio"
    ? new StdioClientTransport({
        command: rest[0],
        args: ["serve", "--external-config", rest[1], "--external-call"],
        env: { ...process.env, E2E_SECRET: "x" },
        stderr: "ignore",
      })
    : mode === "sse"
      ? new SSEClientTransport(new URL(rest[0]))
      : new StreamableHTTPClientTransport(new URL(rest[0]));

const client = new Client({ name: "ts-e2e", version: "1.0.0" });
await client.connect(transport);
const summary = { mode };

// list
const { tools } = await client.listTools();
summary.tools = tools.map((t) => t.name).sort();
if (summary.tools.length !== 3) fail("expected colibri's three tools, got " + summary.tools);

// call
const echo = await client.callTool({
  name: "colibri_external_mcp_call_tool",
  arguments: { server: "demo", name: "echo", arguments: { message: "from typescript" } },
});
summary.echo = text(echo);
if (echo.isError || summary.echo !== "Echo: from typescript") fail("echo: " + JSON.stringify(echo));

// list-tools of a hosted server, structuredContent
const listed = await client.callTool({ name: "colibri_external_mcp_list_tools", arguments: { server: "demo" } });
summary.listed = (listed.structuredContent?.servers?.[0]?.tools || []).map((t) => t.name).sort();
if (!summary.listed.includes("slow")) fail("list-tools: " + JSON.stringify(listed));

// progress
const progress = [];
const slow = await client.callTool(
  { name: "colibri_external_mcp_call_tool", arguments: { server: "demo", name: "slow", arguments: { steps: 4, interval_ms: 20 } } },
  undefined,
  { onprogress: (p) => progress.push(`${p.progress}/${p.total}`) },
);
summary.progress = progress;
// colibri writes all four before the result (the Go tests check the wire).
// This SDK runs notification handlers in a later microtask but forgets a
// request's progress handler as soon as its response is read, so progress
// read in the same chunk as the result can be dropped here: expect a
// non-empty prefix of the sequence, in order.
const expected = ["1/4", "2/4", "3/4", "4/4"];
if (slow.isError || progress.length === 0 || progress.some((p, i) => p !== expected[i]))
  fail("progress: " + JSON.stringify({ progress, slow }));

// cancel: abort after the first progress notification
const controller = new AbortController();
const started = Date.now();
let cancelled = false;
try {
  await client.callTool(
    { name: "colibri_external_mcp_call_tool", arguments: { server: "demo", name: "slow", arguments: { steps: 100, interval_ms: 50 } } },
    undefined,
    { signal: controller.signal, onprogress: () => controller.abort("enough") },
  );
} catch (e) {
  cancelled = true;
}
summary.cancelled = cancelled;
summary.cancelMs = Date.now() - started;
if (!cancelled) fail("the aborted call returned a result");

// colibri still serves after the cancellation
const again = await client.callTool({
  name: "colibri_external_mcp_call_tool",
  arguments: { server: "demo", name: "echo", arguments: { message: "after cancel" } },
});
if (text(again) !== "Echo: after cancel") fail("after cancel: " + JSON.stringify(again));

await client.close();
console.log(JSON.stringify(summary));
process.exit(0);
