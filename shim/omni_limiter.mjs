import { DurableObject } from "cloudflare:workers";

// OmniLimiter: the global rate limiter (issue: OmniLimiter). Bound and
// migrated now so the storage class exists from the first deploy; it answers
// 501 until its Go logic lands.
export class OmniLimiter extends DurableObject {
  async fetch() {
    return Response.json({ error: "OmniLimiter is not implemented yet" }, { status: 501 });
  }
}
