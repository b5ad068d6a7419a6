// How the official TypeScript SDK reads each message of a corpus
// (testdata/strict/corpus.jsonl): JSON.parse, then the SDK's own schema for
// the message and its method (or the method it answers). One JSON line per
// item on stdout: {"reading": …} with the fields internal/strict's
// differential test compares, or {"refused": "why"}.
//
//	node strict-read.mjs ../strict/corpus.jsonl
import { readFileSync } from "node:fs";
import * as t from "@modelcontextprotocol/sdk/types.js";

const requests = {
  "tools/call": t.CallToolRequestSchema,
  "tools/list": t.ListToolsRequestSchema,
  "resources/read": t.ReadResourceRequestSchema,
  "prompts/get": t.GetPromptRequestSchema,
  initialize: t.InitializeRequestSchema,
  ping: t.PingRequestSchema,
  "notifications/cancelled": t.CancelledNotificationSchema,
  "notifications/progress": t.ProgressNotificationSchema,
};
const results = {
  "tools/list": t.ListToolsResultSchema,
  "tools/call": t.CallToolResultSchema,
  initialize: t.InitializeResultSchema,
};

// bytes: the marker <FF> stands for one byte 0xFF (invalid UTF-8), which a
// JSON file of the corpus cannot hold.
function bytesOf(message) {
  const parts = message.split("<FF>").map((p) => Buffer.from(p, "utf8"));
  const out = [];
  parts.forEach((p, i) => {
    if (i > 0) out.push(Buffer.from([0xff]));
    out.push(p);
  });
  return Buffer.concat(out);
}

function canonical(v) {
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === "object") {
    const o = {};
    for (const k of Object.keys(v).sort()) o[k] = canonical(v[k]);
    return o;
  }
  return v;
}

function read(item) {
  const text = bytesOf(item.message).toString("utf8"); // invalid UTF-8 becomes U+FFFD
  let msg;
  try {
    msg = JSON.parse(text);
  } catch (e) {
    return { refused: "JSON.parse: " + e.message };
  }
  const env = t.JSONRPCMessageSchema.safeParse(msg);
  if (!env.success) return { refused: "envelope: " + env.error.issues[0].message };
  const m = env.data;
  if (m.method) {
    const s = requests[m.method];
    let p = m;
    if (s) {
      const r = s.safeParse(msg);
      if (!r.success) return { refused: m.method + ": " + r.error.issues.map((i) => i.path.join("/") + " " + i.message).join("; ") };
      p = r.data;
    }
    const params = p.params || {};
    return {
      reading: canonical({
        method: p.method,
        id: m.id,
        name: params.name,
        uri: params.uri,
        arguments: params.arguments,
        progressToken: params._meta ? params._meta.progressToken : params.progressToken,
        requestId: params.requestId,
        clientInfo: params.clientInfo ? params.clientInfo.name : undefined,
        progress: params.progress,
      }),
    };
  }
  if (m.error) return { reading: canonical({ id: m.id, code: m.error.code, message: m.error.message }) };
  const s = results[item.answers];
  const r = s ? s.safeParse(m.result) : { success: true, data: m.result };
  if (!r.success) return { refused: item.answers + " result: " + r.error.issues.map((i) => i.path.join("/") + " " + i.message).join("; ") };
  const res = r.data;
  return {
    reading: canonical({
      id: m.id,
      tools: res.tools ? res.tools.map((x) => ({ name: x.name, description: x.description, readOnly: x.annotations ? x.annotations.readOnlyHint : undefined, schema: x.inputSchema })) : undefined,
      texts: res.content ? res.content.map((c) => c.text) : undefined,
      isError: res.isError,
      structured: res.structuredContent,
      protocolVersion: res.protocolVersion,
      capabilities: res.capabilities,
    }),
  };
}

for (const line of readFileSync(process.argv[2], "utf8").split("\n")) {
  if (!line.trim()) continue;
  const item = JSON.parse(line);
  let out;
  try {
    out = read(item);
  } catch (e) {
    out = { refused: "threw: " + e.message };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}
