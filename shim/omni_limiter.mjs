import { DurableObject } from "cloudflare:workers";
import { callGo, goBinding } from "./go.mjs";
import { Ledger } from "./ledger.mjs";

// OmniLimiter: one object per rate-limit key (idFromName("limiter_" + key);
// an HTTP client's key is "client:<its name>", durable/limiter.ClientPrefix).
// Plumbing only: Go (durable/limiter.Objects) routes every call and decides
// in memory; this class keeps
// the object's SQLite storage in step with one small write per admission:
//   ring(slot, at, cost)  sliding-window admissions, at most `limit` rows (the largest the key
//                         has had), an expired one overwritten in place, never deleted
//   meta(k, v)            gcra "tat", token bucket "tokens"/"last_ms", the key's "policy"
//                         and "key", and "closed": its lifetime counters as of the last minute fact
// and holds a caller that asked to wait (waitMs) until a slot frees. Its
// ledger gets one fact per minute of traffic (allowed, refused, waited); the
// alarm at a minute's end closes it and sends its fact in the same wake
// (the ledger's checks ride on it too), and an acquire closes the minute
// before its own. Every call and alarm is a billed request: /status counts them.
//
// The tables are made by the first acquire, not by the constructor: a
// status or ledger call of an unknown key only reads, and leaves no storage.
// An idle client key is retired by its alarm (Go says when): its last facts
// sent, its retirement fact sent, its storage deleted (retire).
export class OmniLimiter extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.id = ctx.id.toString();
    // Storage operations since this object started, reported by /status so
    // the benchmark can check the cost per acquire.
    this.ops = { writes: 0, reads: 0 };
    // Billed requests since this object started (calls and alarms), shown
    // by /status so the scale bench counts what the limiter really costs.
    this.requests = { calls: 0, alarms: 0 };
    this.ledger = new Ledger(ctx, env);
    this.ready = this.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").toArray().length > 0;
    this.alarmAt = null; // the runtime alarm as last set here (saves a read per acquire)
  }

  // ensure makes the tables before the first write.
  ensure() {
    if (this.ready) return;
    this.sql.exec("CREATE TABLE IF NOT EXISTS ring (slot INTEGER PRIMARY KEY, at INTEGER NOT NULL, cost INTEGER NOT NULL)");
    this.sql.exec("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL)");
    this.ready = true;
  }

  meta(k) {
    if (!this.ready) return null;
    this.ops.reads++;
    const row = this.sql.exec("SELECT v FROM meta WHERE k = ?", k).toArray()[0];
    return row ? row.v : null;
  }

  setMeta(k, v) {
    this.ops.writes++;
    this.sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES (?, ?)", k, v);
  }

  // restore hands Go what storage holds, under the policy given (and keeps
  // the policy and the key, so a fresh instance can restore from storage alone).
  restore(go, policy, key) {
    this.ensure();
    this.ops.reads++;
    const entries = this.sql.exec("SELECT slot, at, cost FROM ring").toArray();
    const input = {
      policy,
      entries,
      tat: Number(this.meta("tat") ?? 0),
      tokens: Number(this.meta("tokens") ?? 0),
      last_ms: Number(this.meta("last_ms") ?? 0),
      closed: JSON.parse(this.meta("closed") ?? "null"),
      key: key ?? this.meta("key") ?? "",
    };
    const policyJSON = JSON.stringify(policy);
    if (this.meta("policy") !== policyJSON) this.setMeta("policy", policyJSON);
    if (key && this.meta("key") !== key) this.setMeta("key", key);
    callGo(go, "limiterRestore", this.id, JSON.stringify(input), Date.now());
  }

  // restoreStored restores under the policy storage keeps; false when there
  // is none (an unknown key: nothing is written).
  restoreStored(go) {
    const policy = this.meta("policy");
    if (!policy) return false;
    this.restore(go, JSON.parse(policy), null);
    return true;
  }

  persist(w) {
    if (!w) return;
    this.ops.writes++;
    if (w.entry) {
      this.sql.exec("INSERT OR REPLACE INTO ring (slot, at, cost) VALUES (?, ?, ?)", w.entry.slot, w.entry.at, w.entry.cost);
    } else if (w.tat !== undefined) {
      this.sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('tat', ?)", String(w.tat));
    } else if (w.tokens !== undefined) {
      this.sql.exec(
        "INSERT OR REPLACE INTO meta (k, v) VALUES ('tokens', ?), ('last_ms', ?)",
        String(w.tokens),
        String(w.last_ms),
      );
    }
  }

  // record applies the ledger part of a Go answer: a closed minute's fact
  // and the counters it brings (one transaction: no await in between).
  record(go, a) {
    if (!a.fact) return;
    this.ensure();
    this.ops.writes++;
    this.ledger.append(go, [a.fact]);
    this.sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('closed', ?)", JSON.stringify(a.closed));
  }

  // arm keeps the alarm due by the open minute's end and the key's
  // retirement (a time already past is left to the ledger's send, which a
  // retirement waits for), with the ledger's send and check riding on that
  // wake when due shortly before it (Go's rule: durable/ledger.WakeAt).
  async arm(go, openUntil, retireAt) {
    const now = Date.now();
    const own = [openUntil || null, retireAt > now ? retireAt : null].filter((t) => t !== null);
    const want = this.ledger.wakeAt(go, own.length ? Math.min(...own) : null);
    if (want !== null && (this.alarmAt === null || this.alarmAt > want || this.alarmAt < now)) {
      this.alarmAt = want;
      await this.ctx.storage.setAlarm(want);
    }
  }

  // alarm closes the minute of a key that went quiet, sends the ledger, and
  // retires an idle client key.
  async alarm() {
    const go = await goBinding(this.env, this.ctx);
    this.requests.alarms++;
    this.alarmAt = null;
    let a = callGo(go, "limiterRoll", this.id, Date.now());
    if (a.restore_stored && this.restoreStored(go)) {
      // This instance had not seen the object (a fresh one): roll what storage holds.
      a = callGo(go, "limiterRoll", this.id, Date.now());
    }
    this.record(go, a);
    // The minute this alarm closed is a summary already: it goes now, not
    // in a wake of its own the ledger's debounce later.
    if (a.fact) this.ledger.sendNow(go);
    await this.ledger.flush(go);
    if (a.retire && (await this.ctx.blockConcurrencyWhile(() => this.retire(go)))) return;
    await this.arm(go, a.open_until, a.retire_at);
  }

  // retire ends an idle client key (Go decided it is due): once every fact
  // of its ledger is sent, it sends the key's retirement fact (D1 takes the
  // key's totals back: durable/ledger.KindRetired) and deletes the object's
  // storage, alarm included. Run with no other call in between
  // (blockConcurrencyWhile), so no admission is made and then lost. False
  // when it must wait: facts unsent (the ledger's alarm comes back), the key
  // used again, or the send failed (Go's retire_at comes back).
  async retire(go) {
    // Facts unsent, or sent but not yet seen in D1, keep the key alive.
    if (this.ledger.unsentCount() + this.ledger.unconfirmedCount() > 0) return false;
    const fact = callGo(go, "limiterRetire", this.id, this.ledger.appended(), Date.now());
    if (!fact) return false;
    try {
      await this.ledger.send([fact]);
    } catch (e) {
      // Storage stays: Go restores it on the next call, and the alarm tries again.
      console.log(JSON.stringify({ event: "limiter.retire_failed", level: "error", object: this.id, error: String(e?.message ?? e) }));
      return false;
    }
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.ready = false;
    this.alarmAt = null;
    this.ledger.reset();
    console.log(JSON.stringify({ event: "limiter.retired", level: "info", source: fact.source, totals: fact.data?.totals }));
    return true;
  }

  async fetch(request) {
    const url = new URL(request.url);
    const body = request.method === "POST" ? await request.text() : "";
    const { status, json } = await this.call(request.method, url.pathname, body);
    return new Response(json, { status, headers: { "content-type": "application/json" } });
  }

  // call is the RPC entry the Worker uses (no Request/Response objects on
  // the hot path); fetch wraps it for HTTP callers. Go answers what to do
  // (durable/limiter.Answer): restore, persist, record, arm, hold, answer.
  async call(method, path, body) {
    const go = await goBinding(this.env, this.ctx);
    this.requests.calls++;
    const started = Date.now();
    let waited = false;
    for (;;) {
      const a = callGo(go, "limiterCall", this.id, method, path, body, started, waited, Date.now(), this.ops.writes, this.ops.reads,
        this.requests.calls, this.requests.alarms);
      // Storage's policy first: an acquire of a key this instance has not
      // seen is compared with it (Go answers 409 to a change not asked for).
      if (a.restore_stored && this.restoreStored(go)) continue;
      if (a.restore) {
        this.restore(go, a.restore, a.key);
        continue;
      }
      this.persist(a.write); // the output gate holds the answer until this is durable
      this.record(go, a);
      await this.arm(go, a.open_until, 0);
      if (a.wait_ms) {
        // Held instead of refused, while the caller's wait budget lasts.
        waited = true;
        await new Promise((resolve) => setTimeout(resolve, a.wait_ms));
        continue;
      }
      if (a.report) {
        const closed = JSON.parse(this.meta("closed") ?? '{"allowed":0,"refused":0,"waited":0}');
        return { status: 200, json: JSON.stringify(this.ledger.report(a.report, closed)) };
      }
      return { status: a.response.status, json: JSON.stringify(a.response.body) };
    }
  }
}
