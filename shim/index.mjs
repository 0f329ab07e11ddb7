// Module entry Cloudflare loads: the default handler (fetch, scheduled, queue)
// and the three Durable Object classes. Every decision is made in Go.
import { goBinding } from "./go.mjs";

export { EnrichmentController } from "./enrichment_controller.mjs";
export { OmniLimiter } from "./omni_limiter.mjs";
export { SchedulerDO } from "./scheduler.mjs";

export default {
  async fetch(request, env, ctx) {
    const go = await goBinding(env, ctx);
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
