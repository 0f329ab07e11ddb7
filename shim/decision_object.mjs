import { DurableObject } from "cloudflare:workers";
import { goBinding } from "./go.mjs";

// DecisionObject is the plumbing the Go-decided Durable Objects share: the
// state is one JSON string under one key (every write atomic), and every
// call into Go returns a decision the object applies:
//   { state?, alarm_at?, alarm_by?, ensure_alarm_at?, run?, response? }
// alarm_at replaces the alarm; alarm_by brings it forward if it is later or
// unset; ensure_alarm_at sets it only when none is set (self-start after
// eviction or a lost alarm, without racing an alarm that is set).
const STATE_KEY = "state";

export class DecisionObject extends DurableObject {
  // goDecide is the name of the Go function deciding for this class.
  constructor(ctx, env, goDecide) {
    super(ctx, env);
    this.goDecide = goDecide;
    this.state = "";
    // No request or alarm runs until the state is loaded and the loop armed.
    ctx.blockConcurrencyWhile(async () => {
      this.state = (await ctx.storage.get(STATE_KEY)) ?? "";
      await this.decide("load", {});
    });
  }

  // decide applies one Go decision. A storage failure throws: inside
  // alarm() that is a transport-level failure, where the runtime's own
  // alarm retry is right.
  async decide(op, arg) {
    const go = await goBinding(this.env, this.ctx);
    const out = go[this.goDecide](op, this.state, JSON.stringify(arg), Date.now());
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

  // fetch forwards an HTTP call to Go and answers with its response.
  async fetch(request) {
    const url = new URL(request.url);
    const body = request.method === "POST" ? await request.text() : "";
    const d = await this.decide("http", { method: request.method, path: url.pathname, body });
    return Response.json(d.response.body, { status: d.response.status });
  }
}
