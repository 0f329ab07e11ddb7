import { callGo, callGoAsync } from "./go.mjs";

// Ledger: a Durable Object's own append-only history (durable/ledger).
// Plumbing only: Go makes the facts and decides when to send (ledgerPlan);
// this class keeps them in the object's SQLite storage and sends them:
//   ledger_facts(id, at, body, counters, replicated_at, confirmed_at)  one row per fact;
//       replicated_at NULL = not sent yet; confirmed_at NULL = D1 not yet seen to have it
//   ledger_meta(k, v)                              writer state, last_sent_at, appended
// A fact is marked sent only after the queue accepted its batch, so a failed
// send loses nothing; it is confirmed only once a check finds it in D1
// (durable/ledger.Confirm), and one D1 lacks is sent again, so a message the
// queue lost (D1 and R2 down through every retry) loses nothing either. D1
// ignores a fact it already has, so a resend is harmless. Only confirmed
// facts leave the storage.
// The tables are made by the first write, not by the constructor: an object
// that is only read (a status or ledger call of an unknown limiter key)
// gets no storage.
export class Ledger {
  constructor(ctx, env) {
    this.env = env;
    this.sql = ctx.storage.sql;
    this.reset();
  }

  // reset forgets the in-memory state (the storage is gone: a retirement).
  reset() {
    this.ready = this.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ledger_meta'").toArray().length > 0;
    this.writer = JSON.parse(this.meta("writer") ?? '{"due_at":0,"failures":0}');
    this.batchLimit = undefined;
    if (this.ready) this.migrate();
  }

  // migrate adds confirmed_at to a table made before it; the facts sent
  // then count as confirmed (they were, by the rules of their time).
  migrate() {
    const cols = this.sql.exec("PRAGMA table_info(ledger_facts)").toArray();
    if (cols.length === 0 || cols.some((c) => c.name === "confirmed_at")) return;
    this.sql.exec("ALTER TABLE ledger_facts ADD COLUMN confirmed_at INTEGER");
    this.sql.exec("UPDATE ledger_facts SET confirmed_at = replicated_at WHERE replicated_at IS NOT NULL");
  }

  // ensure makes the tables before the first write.
  ensure() {
    if (this.ready) return;
    this.sql.exec(
      "CREATE TABLE IF NOT EXISTS ledger_facts (id TEXT PRIMARY KEY, at INTEGER NOT NULL, body TEXT NOT NULL, counters TEXT NOT NULL, replicated_at INTEGER, confirmed_at INTEGER)",
    );
    this.migrate();
    // The unsent facts, oldest first: what each send reads.
    this.sql.exec("CREATE INDEX IF NOT EXISTS ledger_unsent ON ledger_facts (at) WHERE replicated_at IS NULL");
    // The sent facts D1 is not yet seen to have, oldest send first: what each check reads.
    this.sql.exec("CREATE INDEX IF NOT EXISTS ledger_unconfirmed ON ledger_facts (replicated_at) WHERE replicated_at IS NOT NULL AND confirmed_at IS NULL");
    this.sql.exec("CREATE TABLE IF NOT EXISTS ledger_meta (k TEXT PRIMARY KEY, v TEXT NOT NULL)");
    this.ready = true;
  }

  meta(k) {
    if (!this.ready) return null;
    const row = this.sql.exec("SELECT v FROM ledger_meta WHERE k = ?", k).toArray()[0];
    return row ? row.v : null;
  }

  setMeta(k, v) {
    this.ensure();
    this.sql.exec("INSERT OR REPLACE INTO ledger_meta (k, v) VALUES (?, ?)", k, String(v));
  }

  // appended counts every fact this writer ever appended.
  appended() {
    return Number(this.meta("appended") ?? 0);
  }

  // wakeAt is when the object wakes for its own next alarm at work (unix
  // ms, or null) and for this ledger: Go's rule (durable/ledger.WakeAt), in
  // which a send or check due shortly before work rides on it.
  wakeAt(go, work) {
    const at = callGo(go, "ledgerWakeAt", work ?? 0, JSON.stringify(this.writer));
    return at > 0 ? at : null;
  }

  // sendNow makes the unsent facts due now: the alarm the object is in
  // sends them (facts that need no coalescing, a limiter key's closed minute).
  // work is the object's own next alarm (unix ms, or null): Go may hold
  // them for a later wake of its own (durable/ledger.SendEvery).
  sendNow(go, work = null) {
    if (this.unsentCount() > 0) this.plan(go, "flush", 0, { work: work ?? 0 });
  }

  // dueAt is when the next send or check is due (unix ms), or null.
  dueAt() {
    const times = [this.writer.due_at, this.writer.confirm_at].filter((t) => t > 0);
    return times.length > 0 ? Math.min(...times) : null;
  }

  plan(go, op, remaining, extra = {}) {
    const p = callGo(go, "ledgerPlan", JSON.stringify({ writer: this.writer, step: { op, remaining, ...extra } }), Date.now());
    this.writer = { due_at: p.due_at, failures: p.failures, confirm_at: p.confirm_at ?? 0, sent_at: p.sent_at ?? 0 };
    this.batchLimit = p.batch_limit;
    this.confirmPlan = { batch: p.confirm_batch, sentBefore: p.confirm_sent_before };
    this.setMeta("writer", JSON.stringify(this.writer));
    return p;
  }

  // append stores facts synchronously: called without an await between it
  // and the state write it belongs to, both commit together.
  append(go, facts) {
    if (!facts || facts.length === 0) return;
    this.ensure();
    for (const f of facts) {
      this.sql.exec(
        "INSERT OR IGNORE INTO ledger_facts (id, at, body, counters, replicated_at) VALUES (?, ?, ?, ?, NULL)",
        f.id,
        f.at,
        JSON.stringify(f),
        JSON.stringify(f.counters ?? {}),
      );
    }
    this.setMeta("appended", this.appended() + facts.length);
    this.plan(go, "append", 0);
  }

  unsentCount() {
    if (!this.ready) return 0;
    return this.sql.exec("SELECT COUNT(*) AS n FROM ledger_facts WHERE replicated_at IS NULL").one().n;
  }

  // unconfirmedCount is the sent facts D1 is not yet seen to have.
  unconfirmedCount() {
    if (!this.ready) return 0;
    return this.sql.exec("SELECT COUNT(*) AS n FROM ledger_facts WHERE replicated_at IS NOT NULL AND confirmed_at IS NULL").one().n;
  }

  // flush sends one batch if a send is due, checks sent facts against D1
  // if a check is due, then prunes what retention allows.
  async flush(go) {
    await this.sendDue(go);
    await this.confirmDue(go);
  }

  // confirmDue asks D1 (through Go) which of the oldest sent facts it has:
  // those are confirmed, the others go back to unsent and are sent again.
  async confirmDue(go) {
    const at = this.writer.confirm_at;
    if (!this.ready || !(at > 0) || at > Date.now()) return;
    if (this.confirmPlan === undefined) this.plan(go, "", 0);
    const rows = this.sql
      .exec(
        "SELECT id FROM ledger_facts WHERE replicated_at IS NOT NULL AND confirmed_at IS NULL AND replicated_at <= ? ORDER BY replicated_at LIMIT ?",
        this.confirmPlan.sentBefore,
        this.confirmPlan.batch,
      )
      .toArray();
    let resent = 0;
    if (rows.length > 0) {
      let present;
      try {
        present = new Set((await callGoAsync(go, "ledgerConfirm", JSON.stringify(rows.map((r) => r.id)))).present);
      } catch (e) {
        const p = this.plan(go, "confirm_failed", 0);
        console.log(JSON.stringify({ event: "ledger.confirm_failed", level: "warn", error: String(e?.message ?? e), retry_at: p.confirm_at }));
        return;
      }
      const now = Date.now();
      for (const r of rows) {
        if (present.has(r.id)) {
          this.sql.exec("UPDATE ledger_facts SET confirmed_at = ? WHERE id = ?", now, r.id);
        } else {
          this.sql.exec("UPDATE ledger_facts SET replicated_at = NULL WHERE id = ?", r.id);
          resent++;
        }
      }
      if (resent > 0) {
        console.log(JSON.stringify({ event: "ledger.facts_resent", level: "warn", resent, checked: rows.length,
          action: "sent facts D1 does not have go out again" }));
      }
    }
    const oldest = this.sql.exec("SELECT MIN(replicated_at) AS t FROM ledger_facts WHERE replicated_at IS NOT NULL AND confirmed_at IS NULL").one().t;
    this.plan(go, "confirmed", 0, { resent, oldest_sent_at: oldest ?? 0 });
  }

  // sendDue sends one batch if a send is due, then prunes what retention allows.
  async sendDue(go) {
    const due = this.writer.due_at;
    if (!(due > 0) || due > Date.now()) return;
    // The batch size is Go's; a send after a restart asks for it once.
    if (this.batchLimit === undefined) this.plan(go, "", 0);
    const rows = this.sql.exec("SELECT id, body FROM ledger_facts WHERE replicated_at IS NULL ORDER BY at LIMIT ?", this.batchLimit).toArray();
    let p;
    if (rows.length === 0) {
      p = this.plan(go, "sent", 0);
    } else {
      const facts = rows.map((r) => JSON.parse(r.body));
      try {
        await this.send(facts);
      } catch (e) {
        p = this.plan(go, "failed", this.unsentCount());
        console.log(
          JSON.stringify({ event: "ledger.send_failed", level: "error", error: String(e?.message ?? e), failures: p.failures, retry_at: p.due_at }),
        );
        return;
      }
      const now = Date.now();
      for (const r of rows) this.sql.exec("UPDATE ledger_facts SET replicated_at = ? WHERE id = ?", now, r.id);
      this.setMeta("last_sent_at", now);
      p = this.plan(go, "sent", this.unsentCount());
    }
    // Only facts D1 is seen to have, past retention, leave the object's storage.
    this.sql.exec("DELETE FROM ledger_facts WHERE confirmed_at IS NOT NULL AND at < ?", p.prune_before);
  }

  // send puts one batch of this writer's facts on the queue (throws on failure).
  async send(facts) {
    await this.env.EVENTS.send(JSON.stringify({ kind: "facts", type: "facts", source: facts[0].source, facts }), { contentType: "text" });
  }

  // report is the writer's side of reconciliation (durable/ledger.Report).
  report(source, counters) {
    const pending = {};
    const rows = this.ready
      ? this.sql.exec("SELECT j.key AS k, SUM(j.value) AS v FROM ledger_facts f, json_each(f.counters) j WHERE f.replicated_at IS NULL GROUP BY j.key")
      : [];
    for (const row of rows) {
      pending[row.k] = row.v;
    }
    return {
      source,
      counters,
      pending,
      pending_facts: this.unsentCount(),
      unconfirmed_facts: this.unconfirmedCount(),
      last_sent_at: Number(this.meta("last_sent_at") ?? 0),
      appended: this.appended(),
    };
  }
}
