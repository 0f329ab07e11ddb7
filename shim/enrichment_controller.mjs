import { DecisionObject } from "./decision_object.mjs";
import { callGoAsync, goBinding } from "./go.mjs";

// EnrichmentController: the adaptive crawl loop, one object per crawl
// target. Go (durable/controller, durable/pacing) decides; Go
// (worker/enrichment) performs the I/O of a tick.
export class EnrichmentController extends DecisionObject {
  constructor(ctx, env) {
    super(ctx, env, "enrichmentDecide");
  }

  // work runs when the work alarm is due (DecisionObject.alarm).
  async work(alarmInfo) {
    const d = await this.decide("tick", { retry_count: alarmInfo?.retryCount ?? 0 });
    if (!d.run) return;
    const go = await goBinding(this.env, this.ctx);
    // The run settles every item and reports a run-level failure inside the
    // outcome; it only throws on a bug, and then the runtime retries the alarm.
    const outcome = await callGoAsync(go, "enrichmentRun", JSON.stringify(d.run));
    await this.decide("tick_done", outcome);
  }
}
