// Reference worker for `make bench` (not part of the product), in plain JS:
// the same /health answer as the Go Worker, and /acquire, a minimal
// Durable Object counter with one SQLite write per call reached over RPC,
// so the Go paths' figures can be read against what wrangler dev itself
// can serve here.
import { DurableObject } from "cloudflare:workers";

const started = new Date().toISOString();
let served = 0;

export class RefLimiter extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec("CREATE TABLE IF NOT EXISTS ring (slot INTEGER PRIMARY KEY, at INTEGER NOT NULL)");
    this.n = 0;
  }
  async call(limit) {
    const allowed = this.n < limit;
    if (allowed) {
      this.sql.exec("INSERT OR REPLACE INTO ring (slot, at) VALUES (?, ?)", this.n % limit, Date.now());
      this.n++;
    }
    return JSON.stringify({ allowed, remaining: Math.max(0, limit - this.n) });
  }
}

export default {
  async fetch(request, env) {
    served++;
    const url = new URL(request.url);
    if (url.pathname === "/health") {
      return Response.json({ ok: true, service: "reference", instance_started_at: started, requests_served: served });
    }
    if (url.pathname === "/acquire" && request.method === "POST") {
      const body = await request.json();
      const stub = env.REF_LIMITER.get(env.REF_LIMITER.idFromName("limiter_" + body.key));
      return new Response(await stub.call(body.limit), { headers: { "content-type": "application/json" } });
    }
    return Response.json({ error: "not found" }, { status: 404 });
  },
};
