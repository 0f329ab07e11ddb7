// An agent's view of POST /mcp through the official MCP TypeScript client
// (@modelcontextprotocol/sdk) over Streamable HTTP. Run by worker/e2e's
// TestMCPAgentOverStreamableHTTP against a running `wrangler dev` whose
// catalogue the test seeded:
//
//   node worker/e2e/mcp/agent.mjs --base http://127.0.0.1:PORT
//
// It connects (initialize, notifications/initialized), pings, lists the
// tools, calls each one, calls one with a bad argument, and prints one
// line `RESULT {...}`: the negotiated version, the server's name, the
// tools with their schemas' properties, each call's structured answer and
// the bad call's error. Any failure exits 1 naming the step.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { parseArgs } from "node:util";

const { values: args } = parseArgs({ options: { base: { type: "string" } } });
if (!args.base) {
  console.error("usage: agent.mjs --base URL");
  process.exit(2);
}
const base = args.base.replace(/\/$/, "");

let step = "connect";
const out = { calls: {} };
const client = new Client({ name: "storecrawl-e2e-agent", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(base + "/mcp"));
try {
  await client.connect(transport);
  out.protocolVersion = transport.protocolVersion;
  out.server = client.getServerVersion();
  out.sessionId = transport.sessionId ?? null;

  step = "ping";
  await client.ping();

  step = "tools/list";
  const { tools } = await client.listTools();
  out.tools = Object.fromEntries(tools.map((t) => [t.name, {
    properties: Object.keys(t.inputSchema.properties ?? {}).sort(),
    required: t.inputSchema.required ?? [],
  }]));

  const calls = {
    search_apps: { q: "budget" },
    get_app: { id: 101 },
    app_history: { id: 101, days: 30 },
    list_segments: { sort: "opportunity", limit: 1 },
    get_segment: { id: 1 },
    keyword_metrics: { term: "budget planner" },
    list_alerts: {},
  };
  for (const [name, callArgs] of Object.entries(calls)) {
    step = "tools/call " + name;
    const res = await client.callTool({ name, arguments: callArgs });
    if (res.isError) throw new Error(`${name}: tool error: ${res.content?.[0]?.text}`);
    const text = res.content?.[0]?.text;
    const parsed = JSON.parse(text);
    if (JSON.stringify(parsed) !== JSON.stringify(res.structuredContent)) {
      throw new Error(`${name}: text and structuredContent differ`);
    }
    out.calls[name] = res.structuredContent;
  }
  // The next page of segments, by the cursor the first answered.
  step = "tools/call list_segments (next page)";
  const next = out.calls.list_segments.next_cursor;
  const page2 = await client.callTool({ name: "list_segments", arguments: { sort: "opportunity", limit: 1, cursor: next } });
  out.calls.list_segments_page2 = page2.structuredContent;

  step = "tools/call get_app (bad id)";
  try {
    await client.callTool({ name: "get_app", arguments: { id: "not a number" } });
    throw new Error("a bad id was accepted");
  } catch (e) {
    if (e.message === "a bad id was accepted") throw e;
    out.badCall = { code: e.code, message: e.message, data: e.data };
  }
  step = "close";
  await client.close();
} catch (e) {
  console.error(`step ${step} failed: ${e?.stack ?? e}`);
  process.exit(1);
}
console.log("RESULT " + JSON.stringify(out));
