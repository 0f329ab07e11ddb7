// Browser test of the operator dashboard (GET /v1/dashboard) in headless
// Debian Chromium, driven by playwright-core. Run by worker/e2e's
// TestDashboardInBrowser against a running `wrangler dev`:
//
//   node worker/e2e/browser/dashboard.mjs --base http://127.0.0.1:PORT --token TOKEN --out DIR [--history optional]
//
// It loads the page, waits for the charts to have data points, checks a
// control call without the token is refused (401 shown in the page), pastes
// the token, stops the controller from the page and sees it stopped (and
// confirms over the API), pauses and resumes a scheduler task, starts the
// controller again, and saves full-page screenshots in DIR. Any failure
// exits 1 with a message naming the step.
import { launchOnOrigin } from "./launch.mjs";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values: args } = parseArgs({
  options: {
    base: { type: "string" },
    token: { type: "string" },
    out: { type: "string" },
    history: { type: "string", default: "required" }, // required | optional
    chromium: { type: "string", default: process.env.CHROMIUM || "/usr/bin/chromium" },
    timeout: { type: "string", default: "90000" },
  },
});
if (!args.base || !args.token || !args.out) {
  console.error("usage: dashboard.mjs --base URL --token TOKEN --out DIR [--history required|optional]");
  process.exit(2);
}
const base = args.base.replace(/\/$/, "");
const origin = new URL(base).origin;
const timeout = Number(args.timeout);
mkdirSync(args.out, { recursive: true });

const started = Date.now();
let step = "start";
const log = (msg) => console.log(`[${((Date.now() - started) / 1000).toFixed(1)}s] ${msg}`);
const fail = (msg) => { throw new Error(msg); };
const api = async (path) => {
  const r = await fetch(base + path);
  return { status: r.status, body: await r.json().catch(() => null) };
};

const problems = []; // console errors, page errors, CSP violations, off-host requests
let browser;
let context;
let page;
try {
  step = "launch chromium";
  browser = await launchOnOrigin({ executablePath: args.chromium, origin, timeout, viewport: { width: 1400, height: 900 },
    prefix: "dashboard", problems, allowData: true });
  ({ context, page } = browser);
  page.on("console", (m) => {
    // A 404 of a contract endpoint not deployed yet and the 401 this test provokes are shown in the page;
    // other errors are problems.
    if (m.type() === "error" && !/status of (404|401)/.test(m.text())) problems.push("console error: " + m.text());
  });
  page.on("pageerror", (e) => problems.push("page error: " + e.message));

  step = "load /v1/dashboard";
  const resp = await page.goto(base + "/v1/dashboard");
  if (!resp || resp.status() !== 200) fail(`GET /v1/dashboard: HTTP ${resp && resp.status()}`);
  log("loaded " + page.url());

  step = "first refresh";
  await page.waitForFunction(() => Number(document.getElementById("last-refresh").dataset.refreshes) >= 1);
  const hist = await api("/v1/history?target=main");
  log(`GET /v1/history?target=main → ${hist.status}`);

  step = "charts have data points";
  const countPoints = () => page.evaluate(() => ({
    pace: document.querySelectorAll("#chart-pace-main circle.pt").length,
    success: document.querySelectorAll("#chart-success-main circle.pt").length,
    cooldowns: document.querySelectorAll("#chart-pace-main .cooldown-marker").length,
    note: document.getElementById("target-note-main").textContent,
  }));
  if (hist.status === 200 || args.history === "required") {
    if (hist.status !== 200) fail(`/v1/history answered ${hist.status}: ${JSON.stringify(hist.body)}`);
    await page.waitForFunction(() =>
      document.querySelectorAll("#chart-pace-main circle.pt").length > 0 &&
      document.querySelectorAll("#chart-success-main circle.pt").length > 0);
    const pts = await countPoints();
    const apiCooldowns = (hist.body.cooldowns || []).filter((c) => c >= hist.body.since && c <= hist.body.until).length;
    log(`chart points: pace ${pts.pace}, success ${pts.success}; cooldown markers ${pts.cooldowns} (API: ${apiCooldowns}); ${pts.note}`);
    if (apiCooldowns > 0 && pts.cooldowns === 0) fail("the history has cooldowns but the pace chart marks none");
    const polyline = await page.locator("#chart-pace-main polyline.series").count();
    if (polyline === 0) fail("the pace chart has points but no line");
    // The capacity estimate's steps (a fifth or more between buckets) are
    // marked on the pace chart, as many as the history holds.
    let prevCap = null, wantSteps = 0;
    for (const p of hist.body.points || []) {
      const c = p.capacity_per_min;
      if (c == null || !(c > 0)) continue;
      if (prevCap != null && Math.abs(c - prevCap) >= 0.2 * prevCap) wantSteps++;
      prevCap = c;
    }
    const marked = await page.locator("#chart-pace-main .capacity-marker").count();
    log(`capacity steps marked: ${marked} (API history: ${wantSteps})`);
    if (wantSteps > 0 && marked === 0) fail(`the history holds ${wantSteps} capacity steps but the pace chart marks none`);
    // The upstream's cost over the window, from the same history.
    const cost = await page.locator("#target-cost-main").textContent();
    log("upstream requests per app: " + cost);
    if (!/^[\d.]+ over the window \([\d,]+ lookups, [\d,]+ refused · [\d,]+ pages, [\d,]+ refused\)/.test(cost)) fail("the cost row does not show the window's requests per app: " + cost);
  } else {
    const pts = await countPoints();
    log(`history endpoint not available (HTTP ${hist.status}): page says "${pts.note}"; chart data points not checked`);
    if (!/no history yet|history unavailable/.test(pts.note)) fail("the page does not say the history is missing: " + pts.note);
  }

  step = "status values";
  const st0 = await api("/v1/enrichment/status");
  if (!st0.body || st0.body.running !== true) fail("the controller is not running before the test: " + JSON.stringify(st0.body));
  await page.locator("#ctl-running", { hasText: /^running$/ }).waitFor();
  // Both hosts' paces: lookups on the API host, pages on the store host.
  await page.locator("#ctl-paces", { hasText: /lookups \(API host\): [\d.,]+ req\/min.*pages \(store host\): [\d.,]+ req\/min/ }).waitFor();
  log("paces: " + (await page.locator("#ctl-paces").textContent()));
  const num = async (testid) => Number((await page.locator(`[data-testid="${testid}"]`).textContent()).replace(/,/g, ""));
  await page.locator('[data-testid="lim-allowed-upstream-catalogue"]').waitFor();
  const allowed = await num("lim-allowed-upstream-catalogue");
  if (!(allowed > 0)) fail("limiter upstream-catalogue shows no admissions: " + (await page.locator("#limiters").textContent()));
  const lim6h = hist.status === 200 && (hist.body.limiters || []).find((l) => l.key === "upstream-catalogue");
  if (lim6h) {
    await page.waitForFunction(() => /^[\d,]+$/.test(document.querySelector('[data-testid="lim6h-allowed-upstream-catalogue"]').textContent));
    log(`limiter upstream-catalogue: ${allowed} allowed since start, ${await num("lim6h-allowed-upstream-catalogue")} in the last 6 h (API: ${lim6h.allowed})`);
  }
  // The pulse (GET /v1/enrichment/pulse): completions/min beside the success rate, the one
  // projection with its basis, the plan beside actual completions, the stall alert as the API decides.
  const pulse = await api("/v1/enrichment/pulse?target=main");
  if (pulse.status !== 200) fail(`/v1/enrichment/pulse answered ${pulse.status}: ${JSON.stringify(pulse.body)}`);
  await page.locator('[data-testid="controller-completions-per-min"]', { hasText: /completed\/min \(last \d+ min\)/ }).waitFor();
  await page.locator('[data-testid="target-projected-basis-main"]', { hasText: /measured/ }).waitFor();
  await page.locator('[data-testid="controller-plan"]', { hasText: /^plan .* · actual [\d.,]+\/min completed/ }).waitFor();
  // The cost guard's line: its state and the month's projected overage.
  await page.locator('[data-testid="controller-cost-guard"]', { hasText: /^(ok|over_included|throttling) · projected overage \$[\d.,]+ of a \$[\d.,]+ budget/ }).waitFor();
  if ((await page.locator('[data-testid="stall-alert"]').getAttribute("data-stalled")) !== String(pulse.body.stalled)) {
    await page.waitForFunction((s) => document.querySelector('[data-testid="stall-alert"]').dataset.stalled === s, String(pulse.body.stalled));
  }
  log(`pulse: ${await page.locator('[data-testid="controller-plan"]').textContent()}; stalled ${pulse.body.stalled}`);
  for (const task of ["charts-refresh", "rating-sweep"]) await page.locator(`#scheduler tr[data-task="${task}"]`).waitFor();
  const counts = await api("/v1/pipeline/counts");
  if (counts.status === 200) {
    const shown = await page.locator("#count-apps-known").textContent();
    if (!/^[\d,]+$/.test(shown)) fail("apps known is not a number: " + shown);
    log(`pipeline counts: apps known ${shown}`);
    // The data-quality panel: a row a field of the counts' quality, its state as the API's.
    const q = counts.body.quality;
    if (q) {
      const fields = Object.keys(q).filter((k) => q[k] && typeof q[k] === "object");
      if (fields.length !== 7) fail("the quality check names " + fields.length + " fields, want the design's 7: " + JSON.stringify(q));
      await page.waitForFunction((n) => document.querySelectorAll("#quality tbody tr[data-quality-field]").length === n, fields.length);
      for (const f of fields) {
        const ok = await page.locator(`#quality tr[data-quality-field="${f}"]`).getAttribute("data-ok");
        if (ok !== String(q[f].ok)) fail(`quality ${f}: the panel says ok=${ok}, the API ${q[f].ok}`);
      }
      if ((await page.locator("#quality").getAttribute("data-ok")) !== String(q.ok)) fail("the quality panel's overall state is not the API's");
      log(`data quality: ${await page.locator("#quality-checked").textContent()}; below: ${fields.filter((f) => !q[f].ok).join(", ") || "none"}`);
    } else {
      await page.locator("#quality-checked", { hasText: "not checked yet" }).waitFor();
      log("data quality: not checked yet (the panel says so)");
    }
  } else {
    log(`GET /v1/pipeline/counts → ${counts.status}: counts not checked`);
  }
  await page.screenshot({ path: join(args.out, "dashboard-before.png"), fullPage: true });

  step = "stop without a token is refused and shown";
  await page.evaluate(() => sessionStorage.clear());
  await page.locator("#ctl-stop").click();
  await page.locator("#messages li.error", { hasText: "401" }).first().waitFor();
  log("shown: " + (await page.locator("#messages li.error").first().textContent()));
  if ((await api("/v1/enrichment/status")).body.running !== true) fail("a stop without the token stopped the controller");

  step = "paste the token";
  await page.locator("#token").fill(args.token);
  await page.locator("#token-save").click();
  await page.locator("#token-state", { hasText: "token set" }).waitFor();
  const storage = await page.evaluate(() => ({ session: sessionStorage.getItem("storecrawl.adminToken"), local: localStorage.length, url: location.href }));
  if (storage.session !== args.token) fail("the token is not in sessionStorage");
  if (storage.local !== 0 || storage.url.includes(args.token)) fail("the token leaked to localStorage or the URL: " + JSON.stringify(storage));
  if ((await page.locator("#token").inputValue()) !== "") fail("the token input was not cleared");

  step = "stop from the page";
  await page.locator("#ctl-stop").click();
  await page.locator("#ctl-running", { hasText: /^stopped$/ }).waitFor();
  const stopped = await api("/v1/enrichment/status");
  if (stopped.body.running !== false) fail("the page shows stopped but the API says " + JSON.stringify(stopped.body));
  log("controller stopped (page and API agree)");
  await page.screenshot({ path: join(args.out, "dashboard-stopped.png"), fullPage: true });

  step = "pause and resume a scheduler task";
  const sweep = page.locator('#scheduler tr[data-task="rating-sweep"]');
  await sweep.locator('button[data-action="pause"]').click();
  await page.locator('#scheduler tr[data-task="rating-sweep"][data-paused="true"]').waitFor();
  let sched = await api("/v1/scheduler/status");
  if (!sched.body.tasks.find((t) => t.name === "rating-sweep").pause) fail("rating-sweep shown paused but the API disagrees");
  await sweep.locator('button[data-action="resume"]').click();
  await page.locator('#scheduler tr[data-task="rating-sweep"][data-paused="false"]').waitFor();
  sched = await api("/v1/scheduler/status");
  if (sched.body.tasks.find((t) => t.name === "rating-sweep").pause) fail("rating-sweep shown resumed but the API disagrees");
  log("rating-sweep paused and resumed from the page");

  step = "start from the page";
  await page.locator("#ctl-start").click();
  await page.locator("#ctl-running", { hasText: /^running$/ }).waitFor();
  if ((await api("/v1/enrichment/status")).body.running !== true) fail("the page shows running but the API disagrees");
  log("controller running again");

  step = "auto-refresh";
  const n = await page.evaluate(() => Number(document.getElementById("last-refresh").dataset.refreshes));
  await page.waitForFunction((n) => Number(document.getElementById("last-refresh").dataset.refreshes) > n, n, { timeout: 30000 });

  step = "screenshot";
  await page.locator("#messages li").first().waitFor();
  await page.screenshot({ path: join(args.out, "dashboard.png"), fullPage: true });
  writeFileSync(join(args.out, "dashboard.html"), await page.content());
  if (problems.length) fail("problems in the page:\n  " + problems.join("\n  "));
  log(`PASS in ${((Date.now() - started) / 1000).toFixed(1)}s; screenshots in ${args.out}`);
} catch (e) {
  console.error(`FAIL at step "${step}": ${e.message}`);
  if (problems.length) console.error("problems in the page:\n  " + problems.join("\n  "));
  if (page) {
    await page.screenshot({ path: join(args.out, "dashboard-failure.png"), fullPage: true }).catch(() => {});
    const msgs = await page.locator("#messages").textContent().catch(() => "");
    if (msgs) console.error("page messages: " + msgs);
  }
  process.exitCode = 1;
} finally {
  if (browser) await browser.close();
}
