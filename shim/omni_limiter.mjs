import { DurableObject } from "cloudflare:workers";
import { callGo, goBinding } from "./go.mjs";
import { Ledger } from "./ledger.mjs";

// OmniLimiter: one object per rate-limit key (idFromName("limiter_" + key)).
// Plumbing only: Go (durable/limiter.Objects) routes every call and decides
// in memory; this class keeps
// the object's SQLite storage in step with one small write per admission:
//   ring(slot, at, cost)  sliding-window admissions, at most `limit` rows (the largest the key
//                         has had), an expired one overwritten in place, never deleted
//   meta(k, v)            gcra "tat", token bucket "tokens"/"last_ms", the key's "policy",
//                         and "closed": its lifetime counters as of the last minute fact
// and holds a caller that asked to wait (waitMs) until a slot frees. Its
// ledger gets one fact per minute of traffic (allowed, refused, waited); the
// alarm closes the minute of a key that went quiet and sends the facts.
export class OmniLimiter extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec("CREATE TABLE IF NOT EXISTS ring (slot INTEGER PRIMARY KEY, at INTEGER NOT NULL, cost INTEGER NOT NULL)");
    this.sql.exec("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL)");
    this.id = ctx.id.toString();
    // Storage operations since this object started, reported by /status so
    // the benchmark can check the cost per acquire.
    this.ops = { writes: 0, reads: 0 };
    this.ledger = new Ledger(ctx, env);
    this.alarmAt = null; // the runtime alarm as last set here (saves a read per acquire)
  }

  meta(k) {
    this.ops.reads++;
    const row = this.sql.exec("SELECT v FROM meta WHERE k = ?", k).toArray()[0];
    return row ? row.v : null;
  }

  // restore hands Go what storage holds, under the policy given.
  restore(go, policy) {
    this.ops.reads++;
    const entries = this.sql.exec("SELECT slot, at, cost FROM ring").toArray();
    const input = {
      policy,
      entries,
      tat: Number(this.meta("tat") ?? 0),
      tokens: Number(this.meta("tokens") ?? 0),
      last_ms: Number(this.meta("last_ms") ?? 0),
      closed: JSON.parse(this.meta("closed") ?? "null"),
    };
    const policyJSON = JSON.stringify(policy);
    if (this.meta("policy") !== policyJSON) {
      this.ops.writes++;
      this.sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('policy', ?)", policyJSON);
    }
    callGo(go, "limiterRestore", this.id, JSON.stringify(input), Date.now());
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
    this.ops.writes++;
    this.ledger.append(go, [a.fact]);
    this.sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('closed', ?)", JSON.stringify(a.closed));
  }

  // arm keeps the alarm due by the open minute's end and the ledger's next send.
  async arm(openUntil) {
    const times = [openUntil || null, this.ledger.dueAt()].filter((t) => t !== null);
    const want = times.length ? Math.min(...times) : null;
    if (want !== null && (this.alarmAt === null || this.alarmAt > want || this.alarmAt < Date.now())) {
      this.alarmAt = want;
      await this.ctx.storage.setAlarm(want);
    }
  }

  // alarm closes the minute of a key that went quiet and sends the ledger.
  async alarm() {
    const go = await goBinding(this.env, this.ctx);
    this.alarmAt = null;
    const a = callGo(go, "limiterRoll", this.id, Date.now());
    this.record(go, a);
    await this.ledger.flush(go);
    await this.arm(a.open_until);
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
    const started = Date.now();
    let waited = false;
    for (;;) {
      const a = callGo(go, "limiterCall", this.id, method, path, body, started, waited, Date.now(), this.ops.writes, this.ops.reads);
      if (a.restore) {
        this.restore(go, a.restore);
        continue;
      }
      if (a.restore_stored) {
        const policy = this.meta("policy");
        if (policy) {
          this.restore(go, JSON.parse(policy));
          continue;
        }
      }
      this.persist(a.write); // the output gate holds the answer until this is durable
      this.record(go, a);
      await this.arm(a.open_until);
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
