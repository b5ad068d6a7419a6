// An MCP Apps server from npm (server-basic-vanillajs) in aggregate mode,
// as an MCP Apps host sees it through colibri: the tool's _meta.ui names a
// ui:// resource, which reads through colibri.
//
//   node ts-apps.mjs COLIBRI_BIN REGISTRY
//
// Prints one JSON summary; exits 1 (reason on stderr) on a failed expectation.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, registry] = process.argv.slice(2);
function fail(msg) {
  console.error("ts-apps: " + msg);
  process.exit(1);
}
const client = new Client({ name: "ts-apps", version: "1.0.0" });
await client.connect(new StdioClientTransport({
  command: bin, args: ["serve", "--external-config", registry, "--aggregate", "--external-call"], env: process.env, stderr: "ignore",
}));
if (!client.getServerCapabilities()?.resources) fail("colibri offers no resources capability in aggregate mode");
const { tools } = await client.listTools();
const tool = tools.find((t) => t.name === "apps__get-time");
if (!tool) fail("apps__get-time is not offered: " + tools.map((t) => t.name));
const uri = tool._meta?.ui?.resourceUri;
if (typeof uri !== "string" || !uri.startsWith("ui://")) fail("no _meta.ui.resourceUri: " + JSON.stringify(tool._meta));
const res = await client.readResource({ uri });
const content = res.contents?.[0];
if (!content || !String(content.text || "").includes("<html") || !String(content.mimeType || "").startsWith("text/html"))
  fail("reading " + uri + ": " + JSON.stringify(res).slice(0, 300));
const call = await client.callTool({ name: "apps__get-time", arguments: {} });
if (call.isError) fail("apps__get-time: " + JSON.stringify(call));
console.log(JSON.stringify({ uri, mimeType: content.mimeType, htmlBytes: content.text.length }));
await client.close();
process.exit(0);
