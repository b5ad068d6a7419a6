// The official TypeScript SDK as the client of `colibri-mcp serve --only
// everything` over stdio, offering sampling and elicitation: the hosted
// server-everything's tools that ask for them are answered by this client,
// through colibri.
//
//   node ts-only.mjs COLIBRI_BIN REGISTRY
//
// Prints one JSON summary on stdout; exits 1 (with the reason on stderr) on
// the first failed expectation.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CreateMessageRequestSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [bin, registry] = process.argv.slice(2);

function fail(msg) {
  console.error("ts-only: " + msg);
  process.exit(1);
}

function text(result) {
  return (result.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");
}

const transport = new StdioClientTransport({
  command: bin,
  args: ["serve", "--only", "everything", "--external-config", registry, "--external-call"],
  env: { ...process.env },
  stderr: "ignore",
});
const client = new Client({ name: "ts-only", version: "1.0.0" }, { capabilities: { sampling: {}, elicitation: {} } });
const asked = { sampling: 0, elicitation: 0 };
client.setRequestHandler(CreateMessageRequestSchema, async () => {
  asked.sampling++;
  return { role: "assistant", content: { type: "text", text: "from typescript sampling" }, model: "ts-test" };
});
client.setRequestHandler(ElicitRequestSchema, async () => {
  asked.elicitation++;
  return { action: "decline" };
});
await client.connect(transport);
const summary = { server: client.getServerVersion()?.name };
const { tools } = await client.listTools();
summary.tools = tools.map((t) => t.name).sort();
for (const name of ["trigger-sampling-request", "trigger-elicitation-request"]) {
  if (!summary.tools.includes(name)) fail(`serve --only lists no ${name}: ${summary.tools.join(", ")}`);
}
const sampled = await client.callTool({ name: "trigger-sampling-request", arguments: { prompt: "hi", maxTokens: 10 } });
summary.sampling = text(sampled);
if (sampled.isError || !summary.sampling.includes("from typescript sampling")) fail("sampling: " + JSON.stringify(sampled));
const elicited = await client.callTool({ name: "trigger-elicitation-request", arguments: {} });
summary.elicitation = text(elicited);
if (elicited.isError || !summary.elicitation.includes("declined")) fail("elicitation: " + JSON.stringify(elicited));
summary.asked = asked;
if (asked.sampling !== 1 || asked.elicitation !== 1) fail("the hosted server's requests reached this client " + JSON.stringify(asked));
const { prompts } = await client.listPrompts();
summary.prompts = prompts.map((p) => p.name).sort();
console.log(JSON.stringify(summary));
await client.close();
