// The official TypeScript SDK calls, in aggregate mode, hosted tools that
// declare an outputSchema (server-filesystem's and server-memory's) where
// colibri itself fails the call: this SDK checks structuredContent against
// the tool's outputSchema, so colibri's own failure must be text only, or
// the client throws a schema error instead of showing colibri's message.
//
//   node ts-aggregate-errors.mjs COLIBRI_BIN REGISTRY GATE NAME JSON_ARGS WANT_PREFIX [NAME JSON_ARGS WANT_PREFIX]...
//
// GATE is "on" or "off". Prints one JSON summary on stdout ({"NAME": text});
// exits 1 (with the reason on stderr) on the first failed expectation.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, registry, gate, ...cases] = process.argv.slice(2);

function fail(msg) {
  console.error("ts-aggregate-errors: " + msg);
  process.exit(1);
}

const args = ["serve", "--external-config", registry, "--aggregate"];
if (gate === "on") args.push("--external-call");
const transport = new StdioClientTransport({ command: bin, args, env: process.env, stderr: "ignore" });
const client = new Client({ name: "ts-aggregate-errors", version: "1.0.0" });
await client.connect(transport);

// The SDK learns each tool's outputSchema from tools/list.
const { tools } = await client.listTools();
const summary = { withOutputSchema: tools.filter((t) => t.outputSchema).length };
for (let i = 0; i + 2 < cases.length; i += 3) {
  const [name, json, want] = cases.slice(i, i + 3);
  let result;
  try {
    result = await client.callTool({ name, arguments: JSON.parse(json) });
  } catch (e) {
    fail(`${name}: the client threw instead of showing colibri's message: ${e.message}`);
  }
  const text = (result.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");
  if (!result.isError || !text.startsWith(want)) fail(`${name}: want isError and "${want}…": ${JSON.stringify(result)}`);
  summary[name] = text;
}
await client.close();
console.log(JSON.stringify(summary));
process.exit(0);
