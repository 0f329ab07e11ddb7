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
    if (request.body && declaredLength(request) > go.bodyBounds.max) {
      // No route takes a body this large: Go judges the request by its
      // Content-Length (a 413 naming body, after the token check) without
      // the body, which is drained here, in the runtime, before the answer
      // goes out (a body left half read made wrangler dev answer 500
      // "Network connection lost"; one cancelled early, a dropped connection).
      const response = await route(go, new Request(request, { body: null }), env);
      await discard(request.body, go.bodyBounds.drain);
      return response;
    }
    return route(go, request, env);
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

function route(go, request, env) {
  if (request.method === "POST" && new URL(request.url).pathname === ACQUIRE_PATH) {
    return acquire(go, request, env);
  }
  return go.handleRequest(request);
}

// declaredLength is a request's Content-Length, -1 when it has none.
function declaredLength(request) {
  const n = Number(request.headers.get("content-length") ?? -1);
  return Number.isFinite(n) ? n : -1;
}

// discard reads a body to its end and throws it away, up to bound bytes;
// past that the rest is cancelled.
async function discard(body, bound) {
  const reader = body.getReader();
  let read = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    read += value.byteLength;
    if (read > bound) return reader.cancel();
  }
}

// acquire is the hot route's fast path: Go checks the client token,
// validates the body, names the key's object and the body to send it (the
// key in the clients' namespace: worker/api.AcquireFront), the object
// decides (Go, in durable/limiter), Go writes the rate-limit headers
// (api.AcquireHeaders). This glue only moves the bytes, sparing the
// request's conversion into Go's net/http and back. The router keeps the
// same route for native tests.
async function acquire(go, request, env) {
  const { text, size } = await boundedBody(request, go.bodyBounds);
  const front = callGo(go, "acquireFront", request.headers.get("authorization") ?? "", text, size);
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

// boundedBody keeps at most bounds.max+1 bytes of a request's body for Go
// to judge (a declared length past max comes without its body: fetch
// drains it). A chunked body past max is drained up to bounds.drain, then
// cancelled, before the answer goes out, as Go's api.finishBody does. size
// is the length as declared, else as read (past max: more than max).
async function boundedBody(request, bounds) {
  const size = declaredLength(request);
  if (!request.body) return { text: "", size: Math.max(size, 0) };
  const reader = request.body.getReader();
  const kept = [];
  let read = 0;
  let done = false;
  while (!done && read <= bounds.drain) {
    const r = await reader.read();
    done = r.done;
    if (done) break;
    if (size <= bounds.max && read <= bounds.max) kept.push(r.value);
    read += r.value.byteLength;
  }
  if (!done) await reader.cancel();
  if (size > bounds.max || read > bounds.max) return { text: "", size: Math.max(size, read) };
  const bytes = new Uint8Array(read);
  let at = 0;
  for (const c of kept) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  return { text: new TextDecoder().decode(bytes), size: read };
}
