// Browser test of the explorer (/app/) in headless Debian Chromium, driven by
// playwright-core. Run by worker/e2e's TestExplorerInBrowser against a
// running `wrangler dev` holding crawled markets:
//
//   node worker/e2e/browser/explorer.mjs --base http://127.0.0.1:PORT --out DIR
//
// It uses the pages as a person does: opens the markets list (the market
// segments), sorts it by demand, trend and opportunity, clicks the top
// segment, clicks one of its apps, opens the top keyword market's keyword, then types the
// start of the app's name into the header's search box. On each page it
// checks what is shown against the API's answer for the same thing, that
// the app page draws its charts (a uPlot canvas, or a table without uPlot
// or for a single point in time), that no request left the Worker's origin and that the page
// logged no error; it saves a full-page screenshot of each page in DIR
// (markets.png, market.png, app.png, keyword.png, search.png). Any failure
// exits 1 with a message naming the step.
import { launchOnOrigin } from "./launch.mjs";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values: args } = parseArgs({
  options: {
    base: { type: "string" },
    out: { type: "string" },
    chromium: { type: "string", default: process.env.CHROMIUM || "/usr/bin/chromium" },
    timeout: { type: "string", default: "30000" },
  },
});
if (!args.base || !args.out) {
  console.error("usage: explorer.mjs --base URL --out DIR");
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
  const r = await fetch(base + path, { signal: AbortSignal.timeout(timeout) });
  if (r.status !== 200) fail(`GET ${path}: HTTP ${r.status}`);
  return r.json();
};
// The page's number format (app.js fmt), to compare the API's values with the text shown.
const fmt = (v, d = 2) => v == null ? "—" : typeof v === "number" ? (Number.isInteger(v) ? v.toLocaleString("en-US") : v.toFixed(d)) : String(v);
const same = (what, shown, want) => { if (shown !== want) fail(`${what}: the page shows ${JSON.stringify(shown)}, the API ${JSON.stringify(want)}`); };

const problems = []; // console errors, page errors, off-origin requests
const requests = []; // every request the pages made
let browser;
let context;
let page;
try {
  step = "launch chromium";
  browser = await launchOnOrigin({ executablePath: args.chromium, origin, timeout, viewport: { width: 1280, height: 900 },
    prefix: "explorer", problems, requests, allowData: false });
  ({ context, page } = browser);
  page.on("console", (m) => {
    // A 404 or 503 of an optional panel's route (no brief, no keyword
    // metrics yet) is shown in the page as "not yet"; other errors are problems.
    if (m.type() === "error" && !/status of (404|503)/.test(m.text())) problems.push("console error: " + m.text());
  });
  page.on("pageerror", (e) => problems.push("page error: " + e.message));
  const ready = async (what) => {
    await page.waitForFunction(() => document.body.dataset.ready);
    const state = await page.evaluate(() => document.body.dataset.ready);
    if (state !== "1") fail(`${what} did not load: ${await page.locator("#main").textContent()}`);
  };
  const shot = (name) => page.screenshot({ path: join(args.out, name + ".png"), fullPage: true });

  step = "markets list";
  const resp = await page.goto(base + "/app/");
  if (!resp || resp.status() !== 200) fail(`GET /app/: HTTP ${resp && resp.status()}`);
  await ready("the markets list");
  const segs = await api("/v1/segments?sort=opportunity&limit=50");
  if (!segs.items.length) fail("the API has no market segments");
  const rows = page.locator("table.segments tr:has(td)");
  same("segments listed", await rows.count(), segs.items.length);
  // Columns: market, opportunity, demand, trend, 30 days, keywords, apps, ratings.
  const checkRow = async (what, row, g) => {
    const td = row.locator("td");
    same(`${what}: name`, await td.nth(0).textContent(), g.name);
    same(`${what}: opportunity`, await td.nth(1).textContent(), fmt(g.scores.opportunity));
    same(`${what}: demand`, await td.nth(2).textContent(), fmt(g.scores.demand));
    same(`${what}: trend`, await td.nth(3).textContent(), g.trend);
    same(`${what}: keywords`, await td.nth(5).textContent(), fmt(g.keyword_count));
    same(`${what}: apps`, await td.nth(6).textContent(), fmt(g.scores.app_count));
    const points = (g.sparkline || []).length;
    if (points > 1) {
      const drawn = await td.nth(4).locator("svg.spark polyline").getAttribute("points");
      same(`${what}: sparkline points`, drawn.split(" ").length, points);
    }
    return points;
  };
  const top = segs.items[0];
  const topPoints = await checkRow("the first segment", rows.first(), top);
  if (topPoints < 2) fail(`the first segment's sparkline has ${topPoints} points: nothing drawn`);
  log(`markets: ${segs.items.length} segments, first ${top.name} (${top.id}) at ${fmt(top.scores.opportunity)}, ${topPoints}-day sparkline`);
  // Sorting by demand, then trend, lists the API's order for that sort.
  for (const sort of ["demand", "trend", "opportunity"]) {
    await page.locator(`table.segments th[data-key="${sort}"]`).click();
    await page.waitForURL((u) => u.searchParams.get("sort") === sort);
    await ready(`the markets list by ${sort}`);
    const bySort = await api(`/v1/segments?sort=${sort}&limit=50`);
    same(`segments listed by ${sort}`, await rows.count(), bySort.items.length);
    await checkRow(`the first segment by ${sort}`, rows.first(), bySort.items[0]);
    log(`markets by ${sort}: first ${bySort.items[0].name}`);
  }
  await shot("markets");

  step = "one market";
  await rows.first().locator("a").click();
  await page.waitForURL(base + "/app/markets/" + top.id);
  await ready("the market page");
  const g = await api("/v1/segments/" + top.id);
  same("the market's title", await page.locator("h1").textContent(), "Market: " + g.name);
  const card = (label) => page.locator(`.card[data-score="${label}"] b`).textContent();
  same("the market's opportunity", await card("opportunity"), fmt(g.scores.opportunity, 1));
  same("the market's demand", await card("demand"), fmt(g.scores.demand));
  same("the market's fragmentation", await card("fragmentation"), fmt(g.scores.fragmentation));
  same("the market's quality gap", await card("quality gap"), fmt(g.scores.quality_gap));
  same("the market's apps", await card("apps"), fmt(g.scores.app_count));
  const memberRows = page.locator("table.members tr:has(td)");
  if (!g.apps.length) fail("the segment has no apps");
  same("the market's apps listed", await memberRows.count(), g.apps.length);
  const members = [];
  for (const [i, a] of g.apps.entries()) {
    const td = memberRows.nth(i).locator("td");
    const rec = i < 10 ? await api("/v1/apps/" + a.track_id) : null;
    members.push({ track_id: a.track_id, name: rec && rec.name });
    same(`app ${i}'s name`, await td.nth(0).textContent(), (rec && rec.name) || String(a.track_id));
    same(`app ${i}'s ratings`, await td.nth(2).textContent(), fmt(a.ratings));
    same(`app ${i}'s share`, (await td.nth(3).textContent()).trim(), (a.share * 100).toFixed(1) + "%");
  }
  same("the market's keywords", await page.locator("ul.keywords li").count(), g.keywords.length);
  same("the market's neighbours", await page.locator("ul.neighbours li").count(), (g.relations || []).length);
  // Themes and brief come from the keyword market of its name or first keywords.
  let kwMarket = null;
  for (const term of [...new Set([g.name, ...g.keywords])].slice(0, 3)) {
    const r = await fetch(base + "/v1/clusters/" + encodeURIComponent(term), { signal: AbortSignal.timeout(timeout) });
    if (r.status === 200) { kwMarket = term; break; }
  }
  if (kwMarket) {
    same("the market's keyword market", await page.locator(`main p a[href="/app/markets/${encodeURIComponent(kwMarket)}"]`).textContent(), kwMarket);
  }
  // The evaluation panel says what GET /v1/segments/{id}/evaluation says: its state, or "not yet" on a 404.
  const ev = await fetch(base + "/v1/segments/" + top.id + "/evaluation", { signal: AbortSignal.timeout(timeout) });
  if (ev.status === 200) {
    same("the market's evaluation state", await page.locator(".panel.evaluation").getAttribute("data-state"), (await ev.json()).state);
  } else if (ev.status === 404) {
    same("the market's evaluation", await page.locator("p.evaluation").count(), 1);
  } else {
    fail(`GET /v1/segments/${top.id}/evaluation: HTTP ${ev.status}`);
  }
  log(`market ${g.name} (${g.id}): evaluation HTTP ${ev.status}; themes of keyword market ${kwMarket}; opportunity ${fmt(g.scores.opportunity, 1)}, ${g.apps.length} apps, ${g.keywords.length} keywords, ${(g.relations || []).length} neighbours`);
  await shot("market");

  step = "one app";
  // The member with the most rating history, so its charts have points.
  let pick = null;
  for (const mem of members.slice(0, 10)) {
    const h = await api(`/v1/apps/${mem.track_id}/history?days=365&limit=500`);
    const n = (h.ratings || []).length;
    if (mem.name && (!pick || n > pick.n)) pick = { mem, n, h };
  }
  if (!pick) fail("no app of the market has a name");
  const i = members.indexOf(pick.mem);
  await memberRows.nth(i).locator("a").click();
  await page.waitForURL(base + "/app/apps/" + pick.mem.track_id);
  await ready("the app page");
  const app = await api("/v1/apps/" + pick.mem.track_id);
  same("the app's name", await page.locator("h1").textContent(), app.name);
  const field = (k) => page.locator(`.card[data-field="${k}"] b`).textContent();
  same("the app's rating count", await field("rating count"), fmt(app.rating_count));
  same("the app's average rating", await field("average rating"), fmt(app.average_rating));
  const uplot = await page.evaluate(() => typeof window.uPlot === "function");
  for (const title of ["rating count", "average rating", "keyword ranks"]) {
    const box = page.locator(`.chart[data-chart="${title}"]`);
    // Points in time: a chart's x values (keyword ranks by day).
    const points = new Set(title === "keyword ranks" ? (pick.h.keyword_ranks || []).map((r) => r.day) : (pick.h.ratings || []).map((r) => r.at)).size;
    if (!points) {
      await box.locator("p", { hasText: "no history yet" }).waitFor();
      log(`app chart "${title}": no history, says so`);
    } else if (uplot && points > 1) {
      await box.locator("canvas").waitFor();
      log(`app chart "${title}": uPlot canvas for ${points} points`);
    } else {
      await box.locator("table tr:has(td)").first().waitFor();
      await page.waitForTimeout(100); // a uPlot drawn by mistake comes in the next frame
      if (await box.locator("canvas").count()) fail(`app chart "${title}": a uPlot canvas for ${points} point in time, want a table`);
      log(`app chart "${title}": table for ${points} points`);
    }
  }
  if (!pick.n) fail(`app ${app.track_id} has no rating history: the charts were not drawn`);
  log(`app ${app.track_id} "${app.name}": ${fmt(app.rating_count)} ratings, ${pick.n} rating points, uPlot ${uplot}`);
  await shot("app");

  step = "one keyword";
  // The top keyword market (GET /v1/opportunities): its keyword's page.
  const opp = (await api("/v1/opportunities?limit=1")).items[0];
  if (!opp) fail("the API has no keyword markets");
  const m = await api("/v1/clusters/" + encodeURIComponent(opp.cluster_id));
  await page.goto(base + "/app/keywords/" + encodeURIComponent(m.cluster_id));
  await ready("the keyword page");
  same("the keyword's title", await page.locator("h1").textContent(), "Keyword: " + m.cluster_id);
  const rankRows = page.locator("table.rankings tr:has(td)");
  same("the keyword's apps", await rankRows.count(), m.members.length);
  same("the keyword's first app", await rankRows.first().locator("td").nth(1).textContent(), m.members[0].name || String(m.members[0].track_id));
  const marketLink = await page.locator(`a[href="/app/markets/${encodeURIComponent(m.cluster_id)}"]`).textContent();
  same("the keyword's market link", marketLink, `market (opportunity ${fmt(m.opportunity_score, 1)})`);
  await page.locator('.chart[data-chart="rank history (30 days)"]').waitFor();
  log(`keyword ${m.cluster_id}: ${m.members.length} apps, ${marketLink}`);
  await shot("keyword");

  step = "search";
  const prefix = app.name.slice(0, Math.min(app.name.length, 6));
  await page.goto(base + "/app/");
  await ready("the markets list");
  await page.locator("#searchbox input").fill(prefix);
  await page.locator("#searchbox input").press("Enter");
  await page.waitForURL((u) => u.pathname === "/app/search" && u.searchParams.get("q") === prefix);
  await ready("the search page");
  const found = await api("/v1/search?kind=apps&q=" + encodeURIComponent(prefix));
  if (!found.items.some((a) => a.track_id === app.track_id)) {
    // Not on the API's first page: the page's "more" must reach it.
    log(`search "${prefix}": app not on the first page of ${found.items.length}`);
  }
  const hit = page.locator(`table.apps a[href="/app/apps/${app.track_id}"]`);
  for (let k = 0; k < 20 && (await hit.count()) === 0; k++) {
    const more = page.locator("table.apps + button.more");
    if (await more.isHidden()) break;
    const n = await page.locator("table.apps tr:has(td)").count();
    await more.click();
    await page.waitForFunction((n) => document.querySelectorAll("table.apps tr:has(td)").length > n, n);
  }
  if ((await hit.count()) === 0) fail(`search "${prefix}" did not find ${app.name} (${app.track_id})`);
  same("the search's first app", await page.locator("table.apps tr:has(td)").first().locator("td").first().textContent(), found.items[0].name);
  log(`search "${prefix}": finds ${app.name}; ${await page.locator("table.apps tr:has(td)").count()} apps shown`);
  await shot("search");

  step = "requests";
  const off = requests.filter((u) => !u.startsWith(origin + "/"));
  if (off.length) fail("requests off the Worker's origin: " + off.join(", "));
  log(`${requests.length} requests, all to ${origin}`);
  writeFileSync(join(args.out, "requests.txt"), requests.join("\n") + "\n");
  if (problems.length) fail("problems in the pages:\n  " + problems.join("\n  "));
  log(`PASS in ${((Date.now() - started) / 1000).toFixed(1)}s; screenshots in ${args.out}`);
} catch (e) {
  console.error(`FAIL at step "${step}": ${e.message}`);
  if (problems.length) console.error("problems in the pages:\n  " + problems.join("\n  "));
  if (page) {
    await page.screenshot({ path: join(args.out, "explorer-failure.png"), fullPage: true }).catch(() => {});
    console.error("page: " + page.url() + "\n" + (await page.locator("#main").textContent().catch(() => "")).slice(0, 2000));
  }
  process.exitCode = 1;
} finally {
  if (browser) await browser.close();
}
