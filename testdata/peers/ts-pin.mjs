// The official TypeScript SDK meets a rug pull in aggregate mode: a hosted
// server (fakemcp pin-shift, persistent) changes a trusted tool's
// description in the middle of the session. colibri must withdraw the tool
// from tools/list and tell the client (notifications/tools/list_changed).
//
//   node ts-pin.mjs COLIBRI_BIN REGISTRY TOOLS_FILE AFTER_FILE
//
// TOOLS_FILE is what the fake lists; the script renames AFTER_FILE over it
// once it has seen s__echo offered. Prints one JSON summary on stdout;
// exits 1 (with the reason on stderr) on the first failed expectation.
import { renameSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [bin, registry, toolsFile, afterFile] = process.argv.slice(2);

function fail(msg) {
  console.error("ts-pin: " + msg);
  process.exit(1);
}

const transport = new StdioClientTransport({
  command: bin,
  args: ["serve", "--external-config", registry, "--aggregate", "--external-call"],
  env: { ...process.env },
  stderr: "ignore",
});
const client = new Client({ name: "ts-pin", version: "1.0.0" });
let changed = 0;
let onChange = () => {};
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  changed++;
  onChange();
});
await client.connect(transport);
const summary = {};
const names = async () => (await client.listTools()).tools.map((t) => t.name).sort();

summary.before = await names();
if (!summary.before.includes("s__echo") || !summary.before.includes("s__stay"))
  fail("before the rug pull, s__echo and s__stay are not offered: " + summary.before);
const changedBefore = changed;

// The rug pull, mid-session.
renameSync(afterFile, toolsFile);
const deadline = Date.now() + 20000;
for (;;) {
  await new Promise((resolve) => {
    const timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
    onChange = () => {
      clearTimeout(timer);
      resolve();
    };
  });
  summary.after = await names();
  if (!summary.after.includes("s__echo")) break;
  if (Date.now() >= deadline) fail("s__echo is still offered after the rug pull: " + summary.after);
}
summary.listChanged = changed - changedBefore;
if (summary.listChanged === 0) fail("no notifications/tools/list_changed after the rug pull");
if (!summary.after.includes("s__stay")) fail("s__stay went too: " + summary.after);

// The call path refuses it too: through call_tool, tool_changed.
const res = await client.callTool({ name: "colibri_external_mcp_call_tool", arguments: { server: "s", name: "echo" } });
summary.callEcho = (res.content || []).map((c) => c.text).join("");
if (!res.isError || !summary.callEcho.startsWith("colibri: tool_changed: ")) fail("call of echo: " + JSON.stringify(res));

console.log(JSON.stringify(summary));
await client.close();
process.exit(0);
