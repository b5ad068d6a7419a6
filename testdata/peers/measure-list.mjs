// What a model reads to learn colibri's tools: measured with the official
// TypeScript SDK, for docs/benchmarks.md ("What a model reads").
//
//   node measure-list.mjs COLIBRI_BIN REGISTRY [--aggregate]
//
// Prints one JSON line: the bytes of tools/list, and of list_tools {}
// (listing every server): its text content (what most clients hand the
// model) and the whole result (text and structuredContent); and the text of
// list_tools {"detail": "full"}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, registry, ...flags] = process.argv.slice(2);
const client = new Client({ name: "measure", version: "1.0.0" });
await client.connect(
  new StdioClientTransport({ command: bin, args: ["serve", "--external-config", registry, ...flags], stderr: "ignore" }),
);
const bytes = (v) => Buffer.byteLength(typeof v === "string" ? v : JSON.stringify(v));
const { tools } = await client.listTools();
const all = await client.callTool({ name: "colibri_external_mcp_list_tools", arguments: {} });
const textOf = (r) => (r.content || []).map((c) => c.text || "").join("");
const text = textOf(all);
// The whole lists, as "detail": "full" asks (colibri before issue 13 knows
// no "detail": then null).
const full = await client.callTool({ name: "colibri_external_mcp_list_tools", arguments: { detail: "full" } });
console.log(
  JSON.stringify({
    tools: tools.length,
    toolsListBytes: bytes({ tools }),
    ownToolsBytes: bytes({ tools: tools.filter((t) => t.name.startsWith("colibri_external_mcp_")) }),
    listEverythingTextBytes: bytes(text),
    listEverythingResultBytes: bytes(all),
    detailFullTextBytes: full.isError ? null : bytes(textOf(full)),
  }),
);
await client.close();
