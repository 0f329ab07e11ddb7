import { DecisionObject } from "./decision_object.mjs";
import { callGoAsync, goBinding } from "./go.mjs";

// SchedulerDO: one alarm for every periodic task (idFromName("v1")). Go
// (durable/scheduler) decides what is due and when to wake; Go
// (worker/scheduler_js.go) runs each task of the features' modules
// (worker/modules.go PeriodicTasks).
export class SchedulerDO extends DecisionObject {
  constructor(ctx, env) {
    super(ctx, env, "schedulerDecide");
  }

  // work runs when the work alarm is due (DecisionObject.alarm).
  async work(alarmInfo) {
    const d = await this.decide("tick", { retry_count: alarmInfo?.retryCount ?? 0 });
    // Each task in its own error boundary: one task's failure is its result,
    // never another task's.
    await Promise.all((d.run ?? []).map((task) => this.runTask(task)));
    await this.decide("rearm", {});
  }

  // runTask runs one task whose lease Go took and records its result;
  // the "finish" decision's response is the run's answer.
  async runTask(task) {
    const go = await goBinding(this.env, this.ctx);
    let result;
    try {
      result = await callGoAsync(go, "schedulerRunTask", task);
    } catch (e) {
      result = { task, ok: false, error: String(e?.message ?? e) };
    }
    return this.decide("finish", result);
  }

  // answer: a run with "wait" (Go set run and wait_ms) answers with the
  // run's result, or after wait_ms with the task's state while the run goes
  // on (waitUntil keeps the object alive for it).
  async answer(d) {
    if (!d.wait_ms || !d.run?.length) return super.answer(d);
    const task = d.run[0];
    const run = this.runTask(task).then(async (finished) => {
      await this.decide("rearm", {});
      return finished;
    });
    this.ctx.waitUntil(run);
    let timer;
    const late = new Promise((resolve) => (timer = setTimeout(() => resolve(null), d.wait_ms)));
    const finished = await Promise.race([run, late]);
    clearTimeout(timer);
    return super.answer(finished ?? (await this.decide("run_timeout", { task })));
  }
}
