// Module entry Cloudflare loads: the default handler (fetch, scheduled, queue)
// and the three Durable Object classes. Every decision is made in Go.
import { callGo, goBinding } from "./go.mjs";

export { EnrichmentController } from "./enrichment_controller.mjs";
export { OmniLimiter } from "./omni_limiter.mjs";
export { SchedulerDO } from "./scheduler.mjs";

const ACQUIRE_PATH = "/v1/limiter/acquire";

export default {
  async fetch(request, env, ctx) {
    const go = await goBinding(env, ctx);
    if (request.method === "POST" && new URL(request.url).pathname === ACQUIRE_PATH) {
      return acquire(go, request, env);
    }
    return go.handleRequest(request);
  },
  async scheduled(event, env, ctx) {
    const go = await goBinding(env, ctx);
    await go.runScheduler(event);
  },
  async queue(batch, env, ctx) {
    const go = await goBinding(env, ctx);
    await go.handleQueueMessageBatch(batch);
  },
};

// acquire is the hot route's fast path: Go checks the client token,
// validates the body, names the key's object and the body to send it (the
// key in the clients' namespace: worker/api.AcquireFront), the object
// decides (Go, in durable/limiter), Go writes the rate-limit headers
// (api.AcquireHeaders). This glue only moves the bytes, sparing the
// request's conversion into Go's net/http and back. The router keeps the
// same route for native tests.
async function acquire(go, request, env) {
  const body = await request.text();
  const front = callGo(go, "acquireFront", request.headers.get("authorization") ?? "", body);
  if (front.status) return Response.json(front.body, { status: front.status, headers: front.headers ?? {} });
  let status, json;
  try {
    const ns = env[front.binding];
    ({ status, json } = await ns.get(ns.idFromName(front.object)).call("POST", "/acquire", front.send));
  } catch (e) {
    console.log(JSON.stringify({ event: "limiter.call_failed", level: "error", key: front.key, error: String(e?.message ?? e) }));
    return Response.json({ error: "limiter unavailable" }, { status: 502 });
  }
  const headers = status === 200 ? callGo(go, "acquireHeaders", front.key, front.limit, front.window, json) : {};
  return new Response(json, { status, headers: { "content-type": "application/json", ...headers } });
}
