import { DurableObject } from "cloudflare:workers";
import { goBinding } from "./go.mjs";

// SchedulerDO: one alarm for every periodic task (idFromName("v1")).
// Plumbing only: Go (durable/scheduler) decides what is due and when to
// wake; Go (worker/tasks.go) runs each task. State is one JSON value under
// one key. Decisions: { state?, alarm_at?, ensure_alarm_at?, run?, response? }
const STATE_KEY = "state";

export class SchedulerDO extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.state = "";
    ctx.blockConcurrencyWhile(async () => {
      this.state = (await ctx.storage.get(STATE_KEY)) ?? "";
      await this.decide("load", {});
    });
  }

  // decide applies one Go decision. A storage failure throws: for alarm()
  // that is a transport-level failure, where the runtime's retry is right.
  async decide(op, arg) {
    const go = await goBinding(this.env, this.ctx);
    const out = go.schedulerDecide(op, this.state, JSON.stringify(arg), Date.now());
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
    } else if (d.ensure_alarm_at && (await this.ctx.storage.getAlarm()) === null) {
      await this.ctx.storage.setAlarm(d.ensure_alarm_at);
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
    const go = await goBinding(this.env, this.ctx);
    // Each task in its own error boundary: one task's failure is its result,
    // never another task's.
    await Promise.all(
      (d.run ?? []).map(async (task) => {
        let result;
        try {
          result = JSON.parse(await go.schedulerRunTask(task));
        } catch (e) {
          result = { task, ok: false, error: String(e?.message ?? e) };
        }
        await this.decide("finish", result);
      }),
    );
    await this.decide("rearm", {});
  }
}
