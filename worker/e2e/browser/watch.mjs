// A person watches a keyword in the explorer, in headless Debian Chromium
// driven by playwright-core. Run by worker/e2e's TestAlertReachesSignedWebhook
// against a running `wrangler dev` whose crawl knows the keyword:
//
//   node worker/e2e/browser/watch.mjs --base http://127.0.0.1:PORT --token ADMIN --keyword budget --hook URL [--app ID] --out DIR
//
// It opens /app/search, types the keyword into the search box, checks the
// keywords listed against GET /v1/search, clicks the keyword, checks its page
// against the API, clicks Watch and gives the admin token when the page asks
// for it; the watch must then be in GET /v1/watches with the id the page
// shows. In the watch's "Alert me" form it asks for a rank_change webhook to
// URL without places first (the API's 400 must show next to places, and no
// rule be made), then with places 1: the rule must be in GET
// /v1/alert-rules, and the page must show the rule and the signing secret of
// the API's answer. Clicking Watch again after a reload must not ask again
// (the token is kept for the tab), must show the API's refusal of a second
// watch, and the form of the watch there is. No request may leave the
// Worker's origin. Screenshots: watch-search.png, watch-keyword.png,
// watch-rule.png (and watch-app.png) in DIR. It prints "watch_id=N",
// "rule_id=N" and "secret=whsec_..." (and "app_watch_id=N",
// "app_rule_id=N") on success.
//
//   node worker/e2e/browser/watch.mjs --base URL --alert ID --token ADMIN --out DIR
//
// opens the Alerts page from the header and checks alert ID's row (type,
// watch, state, attempts, text) against GET /v1/alerts, and the Watches list
// (each watch and the rules that apply to it) against GET /v1/watches and
// GET /v1/alert-rules; screenshot watch-alerts.png. Then it deletes each
// watch with its Delete button (confirmed, the admin token given): the
// watches and the rules limited to them must be gone, the alert still
// listed. Any failure exits 1 with a message naming the step.
import { launchOnOrigin } from "./launch.mjs";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values: args } = parseArgs({
  options: {
    base: { type: "string" },
    out: { type: "string" },
    token: { type: "string" },
    keyword: { type: "string" },
    app: { type: "string" },
    alert: { type: "string" },
    hook: { type: "string" },
    chromium: { type: "string", default: process.env.CHROMIUM || "/usr/bin/chromium" },
    timeout: { type: "string", default: "30000" },
  },
});
if (!args.base || !args.out || !args.token || !(args.alert || (args.keyword && args.hook))) {
  console.error("usage: watch.mjs --base URL --token ADMIN_TOKEN --keyword TERM --hook URL --out DIR\n       watch.mjs --base URL --alert ID --token ADMIN_TOKEN --out DIR");
  process.exit(2);
}
const base = args.base.replace(/\/$/, "");
const origin = new URL(base).origin;
const timeout = Number(args.timeout);
const term = args.keyword;
mkdirSync(args.out, { recursive: true });

const started = Date.now();
let step = "start";
const log = (msg) => console.log(`[${((Date.now() - started) / 1000).toFixed(1)}s] ${msg}`);
const fail = (msg) => { throw new Error(msg); };
const get = async (path) => {
  const r = await fetch(base + path, { signal: AbortSignal.timeout(timeout) });
  return { status: r.status, body: await r.json().catch(() => null) };
};
const api = async (path) => {
  const r = await get(path);
  if (r.status !== 200) fail(`GET ${path}: HTTP ${r.status}`);
  return r.body;
};
const same = (what, shown, want) => { if (shown !== want) fail(`${what}: the page shows ${JSON.stringify(shown)}, the API ${JSON.stringify(want)}`); };

const problems = [];
const requests = [];
const dialogs = [];
let browser;
let context;
let page;
try {
  step = "launch chromium";
  browser = await launchOnOrigin({ executablePath: args.chromium, origin, timeout, viewport: { width: 1280, height: 900 },
    prefix: "watch", problems, requests, allowData: false });
  ({ context, page } = browser);
  page.on("console", (m) => {
    // 404/503: an optional panel not there yet; 409: the second Watch, 400:
    // the rule without places, each refused on purpose.
    if (m.type() === "error" && !/status of (404|503|409|400)/.test(m.text())) problems.push("console error: " + m.text());
  });
  page.on("pageerror", (e) => problems.push("page error: " + e.message));
  // The page asks for the admin token with a prompt; the person types it,
  // and confirms deleting a watch.
  page.on("dialog", (d) => {
    dialogs.push(d.type() + ": " + d.message());
    if (d.type() === "prompt") return d.accept(args.token);
    return d.type() === "confirm" && d.message().startsWith("Delete watch") ? d.accept() : d.dismiss();
  });
  const ready = async (what) => {
    await page.waitForFunction(() => document.body.dataset.ready);
    const state = await page.evaluate(() => document.body.dataset.ready);
    if (state !== "1") fail(`${what} did not load: ${await page.locator("#main").textContent()}`);
  };
  const shot = (name) => page.screenshot({ path: join(args.out, name + ".png"), fullPage: true });

  if (args.alert) {
    step = "alerts";
    const resp = await page.goto(base + "/app/search");
    if (!resp || resp.status() !== 200) fail(`GET /app/search: HTTP ${resp && resp.status()}`);
    await ready("the search page");
    await page.locator('header nav a[href="/app/alerts"]').click();
    await page.waitForURL(base + "/app/alerts");
    await ready("the alerts page");
    const list = await api("/v1/alerts?limit=50");
    same("alerts listed", await page.locator("table.alerts tr:has(td)").count(), list.items.length);
    const a = list.items.find((x) => String(x.id) === args.alert);
    if (!a) fail(`GET /v1/alerts has no alert ${args.alert}`);
    const td = page.locator(`table.alerts tr[data-id="${a.id}"] td`);
    same("the alert's type", await td.nth(1).textContent(), a.type);
    same("the alert's watch", await td.nth(2).textContent(), a.payload.watch.kind + " " + a.payload.watch.target);
    same("the alert's state", await td.nth(4).textContent(), a.state);
    same("the alert's attempts", await td.nth(5).textContent(), String(a.attempts));
    same("the alert's text", await td.nth(6).textContent(), a.payload.text);
    log(`alerts: ${list.items.length} listed; alert ${a.id} ${a.type} ${a.state}: ${a.payload.text}`);

    step = "watches";
    const watches = (await api("/v1/watches")).items;
    const rules = (await api("/v1/alert-rules")).items;
    if (!watches.length) fail("GET /v1/watches lists no watch");
    same("watches listed", await page.locator("table.watches tr:has(td)").count(), watches.length);
    for (const w of watches) {
      const td = page.locator(`table.watches tr[data-id="${w.id}"] td`);
      same(`watch ${w.id}'s kind`, await td.nth(1).textContent(), w.kind);
      same(`watch ${w.id}'s target`, await td.nth(2).textContent(), w.target);
      // The rules limited to the watch, besides those of every watch of its kind.
      const limited = (ids) => JSON.stringify(ids.filter((id) => (rules.find((r) => r.id === id) || {}).watch_id !== null).sort());
      const shown = await td.nth(4).locator("li[data-rule-id]").evaluateAll((ls) => ls.map((l) => Number(l.dataset.ruleId)));
      same(`watch ${w.id}'s rules`, limited(shown), limited(rules.filter((r) => r.watch_id === w.id).map((r) => r.id)));
    }
    const r = rules.find((x) => x.id === a.rule_id);
    if (r && r.watch_id != null && r.type === "rank_change") {
      const li = page.locator(`table.watches tr[data-id="${r.watch_id}"] li[data-rule-id="${r.id}"]`);
      if (!(await li.textContent()).startsWith(`${r.type} places ${r.places} → ${r.channel} `)) fail(`rule ${r.id} shows ${JSON.stringify(await li.textContent())}`);
    }
    log(`watches: ${watches.length} listed with ${rules.length} rules`);
    await shot("watch-alerts");

    step = "delete";
    for (const w of watches) {
      await page.locator(`table.watches tr[data-id="${w.id}"] button.delete`).click();
      await page.locator(`table.watches tr[data-id="${w.id}"]`).waitFor({ state: "detached" });
    }
    same("watches after Delete", (await api("/v1/watches")).items.length, 0);
    same("rules limited to a deleted watch", (await api("/v1/alert-rules")).items.filter((x) => x.watch_id != null).length, 0);
    if (!(await api("/v1/alerts?limit=50")).items.some((x) => x.id === a.id)) fail(`alert ${a.id} is gone with its watch`);
    same("the token prompts when deleting", dialogs.filter((d) => d.startsWith("prompt")).length, 1);
    log(`deleted ${watches.length} watches in the page; alert ${a.id} stays`);
  } else {
    step = "search";
    const resp = await page.goto(base + "/app/search");
    if (!resp || resp.status() !== 200) fail(`GET /app/search: HTTP ${resp && resp.status()}`);
    await ready("the search page");
    await page.locator("#q").fill(term);
    await page.locator("#q").press("Enter");
    await page.waitForURL((u) => u.pathname === "/app/search" && u.searchParams.get("q") === term);
    await ready("the search results");
    const kws = await api("/v1/search?kind=keywords&q=" + encodeURIComponent(term));
    same("keywords found", await page.locator("ul.keywords li").count(), kws.items.length);
    for (const [i, k] of kws.items.entries()) {
      same(`keyword ${i}`, await page.locator("ul.keywords li a").nth(i).textContent(), k.keyword);
    }
    const link = page.locator(`ul.keywords a[href="/app/keywords/${encodeURIComponent(term)}"]`);
    if (!(await link.count())) fail(`searching "${term}" does not list the keyword`);
    log(`search "${term}": ${kws.items.length} keywords, ${term} among them`);
    await shot("watch-search");

    step = "the keyword";
    await link.click();
    await page.waitForURL(base + "/app/keywords/" + encodeURIComponent(term));
    await ready("the keyword page");
    same("the keyword's title", await page.locator("h1").textContent(), "Keyword: " + term);
    const m = await get("/v1/clusters/" + encodeURIComponent(term));
    const members = m.status === 200 ? m.body.members : [];
    same("the keyword's apps", await page.locator("table.rankings tr:has(td)").count(), members.length);
    if (m.status !== 200 && !(await page.locator("main p", { hasText: "no market yet" }).count())) fail("the keyword has no market, the page does not say so");
    log(`keyword ${term}: ${members.length} ranked apps, market ${m.status === 200 ? "yes" : "not yet"}`);

    step = "watch";
    const button = page.locator("button.watch");
    same("the watch button", await button.textContent(), "Watch");
    await button.click();
    await page.waitForFunction(() => document.querySelector("button.watch").textContent !== "Watch" || document.querySelector(".watchnote").textContent);
    same("the watch button after the click", await button.textContent(), "Watching");
    same("the token prompts", dialogs.length, 1);
    const id = Number(await button.getAttribute("data-watch-id"));
    const watches = await api("/v1/watches");
    const w = watches.items.find((x) => x.kind === "keyword" && x.target === term);
    if (!w) fail(`GET /v1/watches has no keyword watch of ${term}: ${JSON.stringify(watches)}`);
    same("the watch's id", id, w.id);
    same("the watch note", (await page.locator(".watchnote").textContent()).trim(), "watch " + w.id);
    log(`watched ${term}: watch ${w.id}, the token asked once`);
    await shot("watch-keyword");

    step = "alert rule";
    const form = page.locator("form.ruleform");
    same("the rule form's watch", Number(await form.getAttribute("data-watch-id")), w.id);
    const offers = (await api("/v1/alert-rules")).rule_types;
    const typesOf = (kind) => offers.filter((o) => o.kind === kind).map((o) => o.type).join(",");
    same("the rule types of a keyword watch", (await form.locator('select[name="type"] option').allTextContents()).join(","), typesOf("keyword"));
    same("the keyword rule types", typesOf("keyword"), "rank_change,new_competitor");
    same("the channels", (await form.locator('select[name="channel"] option').allTextContents()).join(","), "webhook,slack");
    await form.locator('select[name="type"]').selectOption("rank_change");
    await form.locator('select[name="channel"]').selectOption("webhook");
    await form.locator('input[name="url"]').fill(args.hook);
    const answer = () => page.waitForResponse((r) => r.url() === base + "/v1/alert-rules" && r.request().method() === "POST");
    let [resp400] = await Promise.all([answer(), form.locator("button.addrule").click()]);
    same("a rule without places", resp400.status(), 400);
    const refused = await resp400.json();
    same("the field the API names", refused.field, "places");
    const placesErr = form.locator('.field[data-field="places"] .fielderr');
    await placesErr.filter({ hasText: /\S/ }).waitFor();
    same("the refusal next to places", (await placesErr.textContent()).trim(), refused.error);
    same("rules after the refusal", (await api("/v1/alert-rules")).items.length, 0);
    log(`a rule without places: 400 "${refused.error}", shown next to places`);
    await form.locator('input[name="places"]').fill("1");
    const [resp201] = await Promise.all([answer(), form.locator("button.addrule").click()]);
    same("the rule's answer", resp201.status(), 201);
    const made = await resp201.json();
    if (!/^whsec_/.test(made.secret || "")) fail(`the rule's answer has no secret: ${JSON.stringify(made)}`);
    await form.locator(".rulemade").waitFor();
    same("the refusal after the rule is made", (await placesErr.textContent()).trim(), "");
    same("the rule's id shown", await form.locator(".rulemade .ruleid").textContent(), String(made.id));
    same("the rule shown", await form.locator(".rulemade .ruletext").textContent(), `rank_change places 1 → webhook ${made.url}`);
    same("the secret shown", await form.locator(".rulemade code.secret").textContent(), made.secret);
    if (!(await form.locator(".rulemade", { hasText: "shown once — keep it" }).count())) fail("the secret is not marked shown once");
    const rules = (await api("/v1/alert-rules")).items;
    const rule = rules.find((r) => r.id === made.id);
    if (rules.length !== 1 || !rule || rule.type !== "rank_change" || rule.places !== 1 || rule.watch_id !== w.id || rule.channel !== "webhook" || "secret" in rule) {
      fail(`GET /v1/alert-rules after the form: ${JSON.stringify(rules)}`);
    }
    same("the token prompts after the rule", dialogs.length, 1);
    log(`rule ${made.id} made in the form: rank_change places 1 on watch ${w.id}, its secret shown once`);
    await shot("watch-rule");

    step = "watch again";
    await page.reload();
    await ready("the keyword page, reloaded");
    await button.click();
    await page.locator(".watchnote").filter({ hasText: /\S/ }).waitFor();
    same("the token prompts after a second watch", dialogs.length, 1);
    same("the second watch button", await button.textContent(), "Watch");
    const note = (await page.locator(".watchnote").textContent()).trim();
    if (!/exists already/.test(note)) fail(`a second watch of ${term} shows ${JSON.stringify(note)}, want the API's refusal`);
    same("watches of the keyword", (await api("/v1/watches")).items.filter((x) => x.kind === "keyword" && x.target === term).length, 1);
    await page.locator("form.ruleform").waitFor();
    same("the rule form of the watch there is", Number(await page.locator("form.ruleform").getAttribute("data-watch-id")), w.id);
    log(`watching ${term} again: "${note}", no second prompt, the watch's form shown`);
    console.log(`watch_id=${w.id}`);
    console.log(`rule_id=${made.id}`);
    console.log(`secret=${made.secret}`);

    if (args.app) {
      step = "watch an app";
      const resp = await page.goto(base + "/app/apps/" + encodeURIComponent(args.app));
      if (!resp || resp.status() !== 200) fail(`GET /app/apps/${args.app}: HTTP ${resp && resp.status()}`);
      await ready("the app page");
      const appButton = page.locator("button.watch");
      same("the app's watch button", await appButton.textContent(), "Watch");
      await appButton.click();
      await page.locator("form.ruleform").waitFor();
      same("the app's watch button after the click", await appButton.textContent(), "Watching");
      same("the token prompts after the app's watch", dialogs.length, 1);
      const aw = (await api("/v1/watches")).items.find((x) => x.kind === "app" && x.target === args.app);
      if (!aw) fail(`GET /v1/watches has no app watch of ${args.app}`);
      same("the app watch's id", Number(await appButton.getAttribute("data-watch-id")), aw.id);
      const appForm = page.locator("form.ruleform");
      same("the rule types of an app watch", (await appForm.locator('select[name="type"] option').allTextContents()).join(","), typesOf("app"));
      await appForm.locator('select[name="type"]').selectOption("rating_drop");
      same("rating_drop's thresholds", (await appForm.locator(".thresholds input").evaluateAll((is) => is.map((i) => i.name))).join(","),
        offers.find((o) => o.type === "rating_drop").fields.join(","));
      await appForm.locator('input[name="drop"]').fill("0.5");
      await appForm.locator('select[name="channel"]').selectOption("webhook");
      await appForm.locator('input[name="url"]').fill(args.hook);
      const [appResp] = await Promise.all([answer(), appForm.locator("button.addrule").click()]);
      same("the app rule's answer", appResp.status(), 201);
      const appRule = await appResp.json();
      await appForm.locator(".rulemade").waitFor();
      same("the app rule shown", await appForm.locator(".rulemade .ruletext").textContent(), `rating_drop drop 0.5 → webhook ${appRule.url}`);
      const listed = (await api("/v1/alert-rules")).items.find((r) => r.id === appRule.id);
      if (!listed || listed.type !== "rating_drop" || listed.drop !== 0.5 || listed.watch_id !== aw.id) fail(`GET /v1/alert-rules has the app rule as ${JSON.stringify(listed)}`);
      log(`app ${args.app}: watch ${aw.id}, rule ${appRule.id} rating_drop drop 0.5 made in its form`);
      await shot("watch-app");
      console.log(`app_watch_id=${aw.id}`);
      console.log(`app_rule_id=${appRule.id}`);
    }
  }

  step = "requests";
  const off = requests.filter((u) => !u.startsWith(origin + "/"));
  if (off.length) fail("requests off the Worker's origin: " + off.join(", "));
  if (problems.length) fail("problems in the pages:\n  " + problems.join("\n  "));
  log(`${requests.length} requests, all to ${origin}; PASS in ${((Date.now() - started) / 1000).toFixed(1)}s`);
} catch (e) {
  console.error(`FAIL at step "${step}": ${e.message}`);
  if (problems.length) console.error("problems in the pages:\n  " + problems.join("\n  "));
  if (dialogs.length) console.error("dialogs: " + dialogs.join("; "));
  if (page) {
    await page.screenshot({ path: join(args.out, "watch-failure.png"), fullPage: true }).catch(() => {});
    console.error("page: " + page.url() + "\n" + (await page.locator("#main").textContent().catch(() => "")).slice(0, 2000));
  }
  process.exitCode = 1;
} finally {
  if (browser) await browser.close();
}
