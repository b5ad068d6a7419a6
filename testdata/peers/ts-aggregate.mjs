// The official TypeScript SDK drives colibri-mcp in aggregate mode, as an
// editor would: hosted tools offered as PREFIX__TOOL, called with progress,
// tools/list_changed after a registry edit, the unknown_tool hint, and the
// size of listing everything.
//
//   node ts-aggregate.mjs COLIBRI_BIN REGISTRY
//
// REGISTRY must hold "demo" and "everything"; the script adds a server
// "late" to it (a copy of demo) while connected. Prints one JSON summary on
// stdout; exits 1 (with the reason on stderr) on the first failed
// expectation.
import { readFileSync, writeFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [bin, registry] = process.argv.slice(2);

function fail(msg) {
  console.error("ts-aggregate: " + msg);
  process.exit(1);
}

function text(result) {
  return (result.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");
}

const transport = new StdioClientTransport({
  command: bin,
  args: ["serve", "--external-config", registry, "--aggregate", "--external-call"],
  env: { ...process.env, E2E_SECRET: "x" },
  stderr: "ignore",
});
const client = new Client({ name: "ts-aggregate", version: "1.0.0" });
let changed = 0;
let onChange = () => {};
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  changed++;
  onChange();
});
await client.connect(transport);
const summary = {};

// The hosted tools, as tools of colibri's own.
let { tools } = await client.listTools();
summary.tools = tools.map((t) => t.name).sort();
for (const want of ["colibri_external_mcp_call_tool", "everything__echo", "demo__echo", "demo__slow", "demo__add"]) {
  if (!summary.tools.includes(want)) fail(`${want} is not offered: ${summary.tools}`);
}
const bad = summary.tools.filter((n) => !/^[A-Za-z0-9_-]{1,64}$/.test(n));
if (bad.length) fail("names an editor refuses: " + bad);
if (new Set(summary.tools).size !== summary.tools.length) fail("a name offered twice: " + summary.tools);
summary.toolsListBytes = Buffer.byteLength(JSON.stringify({ tools }));

// Calls, as through call_tool.
const echo = await client.callTool({ name: "everything__echo", arguments: { message: "from typescript" } });
summary.echo = text(echo);
if (echo.isError || summary.echo !== "Echo: from typescript") fail("everything__echo: " + JSON.stringify(echo));

// demo__add declares an outputSchema: this SDK checks structuredContent against it.
const add = await client.callTool({ name: "demo__add", arguments: { a: 2, b: 40 } });
summary.sum = add.structuredContent?.sum;
if (add.isError || summary.sum !== 42) fail("demo__add: " + JSON.stringify(add));

const progress = [];
const slow = await client.callTool(
  { name: "demo__slow", arguments: { steps: 4, interval_ms: 20 } },
  undefined,
  { onprogress: (p) => progress.push(`${p.progress}/${p.total}`) },
);
summary.progress = progress;
// As in ts-client.mjs: this SDK may drop progress read in the same chunk as
// the result; expect a non-empty prefix, in order.
const expected = ["1/4", "2/4", "3/4", "4/4"];
if (slow.isError || progress.length === 0 || progress.some((p, i) => p !== expected[i]))
  fail("progress: " + JSON.stringify({ progress, slow }));

// unknown_tool names the closest tool and the tools the server has.
const unknown = await client.callTool({
  name: "colibri_external_mcp_call_tool",
  arguments: { server: "demo", name: "ecko", arguments: {} },
});
summary.unknown = text(unknown);
if (!unknown.isError || !summary.unknown.includes('did you mean "echo"? its tools: add, echo, fail, slow'))
  fail("unknown tool: " + summary.unknown);

// Listing everything stays small: names and first sentences.
const all = await client.callTool({ name: "colibri_external_mcp_list_tools", arguments: {} });
summary.listEverythingTextBytes = Buffer.byteLength(text(all));
summary.listEverythingResultBytes = Buffer.byteLength(JSON.stringify(all));
if (all.isError || all.structuredContent.servers.some((s) => (s.tools || []).some((t) => t.inputSchema)))
  fail("list everything: " + JSON.stringify(all));

// A registry edit: tools/list_changed, then the new server's tools.
const listChanged = new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error("no tools/list_changed within 20 s")), 20000);
  onChange = () => {
    clearTimeout(timer);
    resolve();
  };
});
const doc = JSON.parse(readFileSync(registry, "utf8"));
doc.servers.late = { ...doc.servers.demo, description: "Added while serving." };
writeFileSync(registry, JSON.stringify(doc, null, 2));
try {
  await listChanged;
} catch (e) {
  fail(e.message);
}
// A tools/list waits (bounded) for the hosted lists that an edit made
// colibri read: the first list after the notification has the new tools.
({ tools } = await client.listTools());
if (!tools.some((t) => t.name === "late__echo")) fail("late__echo is not offered: " + tools.map((t) => t.name));
const describes = tools.find((t) => t.name === "colibri_external_mcp_list_tools").description;
if (!describes.includes("- late: Added while serving.")) fail("list_tools' description does not name late: " + describes);
summary.listChanged = changed;

await client.close();
console.log(JSON.stringify(summary));
process.exit(0);
