import { DurableObject } from "cloudflare:workers";
import { callGo, goBinding } from "./go.mjs";
import { Ledger } from "./ledger.mjs";

// DecisionObject is the plumbing the Go-decided Durable Objects share: the
// state is one JSON string under one key (every write atomic), and every
// call into Go returns a decision the object applies:
//   { state?, facts?, alarm_at?, alarm_by?, ensure_alarm_at?, run?, response? }
// facts go to the object's ledger in the same transaction as the state.
// alarm_at replaces the work alarm; alarm_by brings it forward if it is
// later or unset; ensure_alarm_at sets it only when none is set (self-start
// after eviction or a lost alarm, without racing an alarm that is set).
//
// One runtime alarm serves two clocks: the object's work (the subclass's
// work()) and the ledger's debounced send. The work alarm is kept in
// storage; the runtime alarm is the work's, with the ledger's send riding
// on it when due shortly before (each wake is a billed request), else the
// earlier of the two.
const STATE_KEY = "state";
const WORK_ALARM_KEY = "work_alarm_at";

export class DecisionObject extends DurableObject {
  // goDecide is the name of the Go function deciding for this class.
  constructor(ctx, env, goDecide) {
    super(ctx, env);
    this.goDecide = goDecide;
    this.state = "";
    this.ledger = new Ledger(ctx, env);
    // No request or alarm runs until the state is loaded and the loop armed.
    ctx.blockConcurrencyWhile(async () => {
      this.state = (await ctx.storage.get(STATE_KEY)) ?? "";
      // An object from before the ledger kept its work alarm only as the runtime alarm.
      this.workAlarm = (await ctx.storage.get(WORK_ALARM_KEY)) ?? (await ctx.storage.getAlarm());
      await this.decide("load", {});
    });
  }

  // decide applies one Go decision. A storage failure throws: inside
  // alarm() that is a transport-level failure, where the runtime's own
  // alarm retry is right.
  async decide(op, arg) {
    const go = await goBinding(this.env, this.ctx);
    const d = callGo(go, this.goDecide, op, this.state, JSON.stringify(arg), Date.now());
    let stored = null;
    if (d.state && d.state !== this.state) {
      // Take the new state before awaiting the write, so a call that
      // interleaves at that await decides on it, not on the old one.
      this.state = d.state;
      stored = this.ctx.storage.put(STATE_KEY, d.state);
    }
    // No await between the state write and the facts: one transaction.
    this.ledger.append(go, d.facts);
    if (stored) await stored;
    let work = this.workAlarm;
    if (d.alarm_at) {
      work = d.alarm_at;
    } else if (d.alarm_by && (work === null || work > d.alarm_by)) {
      work = d.alarm_by;
    } else if (work === null && d.ensure_alarm_at) {
      work = d.ensure_alarm_at;
    }
    await this.setWorkAlarm(work);
    return d;
  }

  async setWorkAlarm(at) {
    if (at !== this.workAlarm) {
      this.workAlarm = at;
      if (at === null) await this.ctx.storage.delete(WORK_ALARM_KEY);
      else await this.ctx.storage.put(WORK_ALARM_KEY, at);
    }
    await this.syncAlarm();
  }

  // syncAlarm sets the runtime alarm to the work alarm, or to the
  // ledger's send or check when that is due well before it (Go's rule:
  // durable/ledger.WakeAt; one due shortly before rides on the work's wake).
  async syncAlarm() {
    const go = await goBinding(this.env, this.ctx);
    const want = this.ledger.wakeAt(go, this.workAlarm);
    const current = await this.ctx.storage.getAlarm();
    if (want === null) {
      if (current !== null) await this.ctx.storage.deleteAlarm();
    } else if (current !== want) {
      await this.ctx.storage.setAlarm(want);
    }
  }

  async alarm(alarmInfo) {
    const go = await goBinding(this.env, this.ctx);
    await this.ledger.flush(go);
    const due = this.workAlarm;
    if (due !== null && due <= Date.now()) {
      // The work's decisions set the next work alarm (or none, when stopped).
      await this.setWorkAlarmQuiet(null);
      try {
        await this.work(alarmInfo);
      } catch (e) {
        // Keep the work due, so the runtime's retry of this alarm runs it.
        if (this.workAlarm === null) await this.setWorkAlarmQuiet(due);
        await this.syncAlarm();
        throw e;
      }
      // The facts the work appended go in this wake, not in one of their
      // own the ledger's debounce later (each wake is a billed request),
      // or in a later wake of the work's when it comes soon (Go's rule).
      this.ledger.sendNow(go, this.workAlarm);
      await this.ledger.flush(go);
    }
    await this.syncAlarm();
  }

  async setWorkAlarmQuiet(at) {
    this.workAlarm = at;
    if (at === null) await this.ctx.storage.delete(WORK_ALARM_KEY);
    else await this.ctx.storage.put(WORK_ALARM_KEY, at);
  }

  // fetch forwards an HTTP call to Go and answers with its response;
  // GET /ledger is the object's side of the ledger reconciliation.
  async fetch(request) {
    const url = new URL(request.url);
    const body = request.method === "POST" ? await request.text() : "";
    const d = await this.decide("http", { method: request.method, path: url.pathname, body });
    if (request.method === "GET" && url.pathname === "/ledger" && d.response.status === 200) {
      return Response.json(this.ledger.report(d.response.body.source, d.response.body.counters));
    }
    return this.answer(d);
  }

  // answer turns an HTTP decision into the response; a subclass whose
  // decisions ask to wait for work (wait_ms) overrides it.
  async answer(d) {
    return Response.json(d.response.body, { status: d.response.status });
  }
}
