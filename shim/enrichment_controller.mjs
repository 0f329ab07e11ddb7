import { DurableObject } from "cloudflare:workers";
import { goBinding } from "./go.mjs";

// EnrichmentController: the adaptive crawl loop, one object per crawl target.
// This class is plumbing only: it loads and stores the state (one JSON string
// under one key, so every write is atomic), sets alarms, and runs what Go
// decides (durable/enrichment). Go answers every call with a decision:
//   { state?, alarm_at?, alarm_by?, ensure_alarm_at?, run?, response? }
const STATE_KEY = "state";

export class EnrichmentController extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.state = "";
    // No request or alarm runs until the state is loaded and the loop armed.
    ctx.blockConcurrencyWhile(async () => {
      this.state = (await ctx.storage.get(STATE_KEY)) ?? "";
      await this.decide("load", {});
    });
  }

  async decide(op, arg) {
    const go = await goBinding(this.env, this.ctx);
    const out = go.enrichmentDecide(op, this.state, JSON.stringify(arg), Date.now());
    if (out instanceof Error) throw out;
    const d = JSON.parse(out);
    if (d.state && d.state !== this.state) {
      // Take the new state before awaiting the write, so a call that
      // interleaves at that await decides on it, not on the old one.
      this.state = d.state;
      await this.ctx.storage.put(STATE_KEY, d.state);
    }
    if (d.alarm_at) {
      await this.ctx.storage.setAlarm(d.alarm_at);
    } else if (d.alarm_by || d.ensure_alarm_at) {
      const current = await this.ctx.storage.getAlarm();
      if (d.alarm_by && (current === null || current > d.alarm_by)) {
        await this.ctx.storage.setAlarm(d.alarm_by);
      } else if (current === null && d.ensure_alarm_at) {
        await this.ctx.storage.setAlarm(d.ensure_alarm_at);
      }
    }
    return d;
  }

  async fetch(request) {
    const url = new URL(request.url);
    const body = request.method === "POST" ? await request.text() : "";
    const d = await this.decide("http", { method: request.method, path: url.pathname, body });
    return Response.json(d.response.body, { status: d.response.status });
  }

  async alarm(alarmInfo) {
    const d = await this.decide("tick", { retry_count: alarmInfo?.retryCount ?? 0 });
    if (!d.run) return;
    const go = await goBinding(this.env, this.ctx);
    // The run settles every item and reports a run-level failure inside the
    // outcome; it only rejects on a bug, and then the runtime retries the alarm.
    const outcome = await go.enrichmentRun(JSON.stringify(d.run));
    await this.decide("tick_done", JSON.parse(outcome));
  }
}
