import { DecisionObject } from "./decision_object.mjs";
import { callGoAsync, goBinding } from "./go.mjs";

// SchedulerDO: one alarm for every periodic task (idFromName("v1")). Go
// (durable/scheduler) decides what is due and when to wake; Go
// (worker/scheduler_js.go, worker/tasks) runs each task.
export class SchedulerDO extends DecisionObject {
  constructor(ctx, env) {
    super(ctx, env, "schedulerDecide");
  }

  // work runs when the work alarm is due (DecisionObject.alarm).
  async work(alarmInfo) {
    const d = await this.decide("tick", { retry_count: alarmInfo?.retryCount ?? 0 });
    const go = await goBinding(this.env, this.ctx);
    // Each task in its own error boundary: one task's failure is its result,
    // never another task's.
    await Promise.all(
      (d.run ?? []).map(async (task) => {
        let result;
        try {
          result = await callGoAsync(go, "schedulerRunTask", task);
        } catch (e) {
          result = { task, ok: false, error: String(e?.message ?? e) };
        }
        await this.decide("finish", result);
      }),
    );
    await this.decide("rearm", {});
  }
}
