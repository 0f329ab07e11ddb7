// The explorer: one shell, filled from the API by the path. Plain DOM; charts
// with uPlot when its files are there, else tables. Every list pages with the
// API's next_cursor ("more").
'use strict';
const main = document.getElementById('main');

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v; else if (k.startsWith('on')) e.addEventListener(k.slice(2), v); else if (v != null) e.setAttribute(k, v);
  }
  for (const c of kids.flat()) if (c != null) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}
const fmt = (v, d = 2) => v == null ? '—' : typeof v === 'number' ? (Number.isInteger(v) ? v.toLocaleString('en-US') : v.toFixed(d)) : String(v);
const pct = v => v == null ? '—' : (v * 100).toFixed(1) + '%';
const enc = encodeURIComponent;

class HTTPError extends Error { constructor(status, body) { super((body && body.error) || ('HTTP ' + status)); this.status = status; } }
async function api(path) {
  const r = await fetch(path, { headers: { Accept: 'application/json' }, credentials: 'same-origin' });
  let body = null;
  try { body = await r.json(); } catch (_) {}
  if (r.status === 401) { askToken(); throw new HTTPError(401, body); }
  if (!r.ok) throw new HTTPError(r.status, body);
  return body;
}
async function maybe(path) { try { return await api(path); } catch (e) { if (e.status === 404 || e.status === 503) return null; throw e; } }

// READ_TOKEN: asked once, kept as the cookie the Worker reads.
let asked = false;
function askToken() {
  if (asked) return; asked = true;
  const input = el('input', { type: 'password', id: 'token', placeholder: 'READ_TOKEN' });
  main.replaceChildren(el('h1', {}, 'This explorer needs a read token'),
    el('form', { onsubmit: ev => { ev.preventDefault();
      document.cookie = 'storecrawl_read=' + enc(input.value) + '; Path=/; SameSite=Strict' + (location.protocol === 'https:' ? '; Secure' : '');
      location.reload(); } }, input, ' ', el('button', {}, 'Open')));
}

// ADMIN_TOKEN, for what a page writes (a watch, a rule, a deletion): asked
// once, kept for the tab in sessionStorage; asked again when the Worker
// refuses it. The answer is { status, body }, or null when no token is given.
const adminKey = 'storecrawl_admin';
async function send(method, path, body) {
  for (let again = false; ; again = true) {
    let token = sessionStorage.getItem(adminKey);
    if (!token || again) {
      token = prompt('ADMIN_TOKEN (kept for this tab)');
      if (!token) return null;
      sessionStorage.setItem(adminKey, token);
    }
    const headers = { Accept: 'application/json', Authorization: 'Bearer ' + token };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const r = await fetch(path, { method, credentials: 'same-origin', headers, body: body === undefined ? undefined : JSON.stringify(body) });
    let b = null;
    try { b = await r.json(); } catch (_) {}
    if (r.status === 401 && !again) { sessionStorage.removeItem(adminKey); continue; }
    return { status: r.status, body: b };
  }
}
const post = (path, body) => send('POST', path, body);
const refusal = r => r ? (r.body && r.body.error) || 'HTTP ' + r.status : 'no token given';

// watchButton watches kind/target (POST /v1/watches); the watch's id lands
// in data-watch-id, a refusal's reason next to the button. Once the watch
// exists (made now, or refused as made already) its "Alert me" form shows.
function watchButton(kind, target) {
  const note = el('span', { class: 'muted watchnote' });
  const b = el('button', { class: 'watch', type: 'button' }, 'Watch');
  const slot = el('div', { class: 'ruleslot' });
  b.addEventListener('click', async () => {
    b.disabled = true;
    const r = await post('/v1/watches', { kind, target });
    if (r && r.status === 201) { b.textContent = 'Watching'; b.dataset.watchId = r.body.id; note.textContent = ' watch ' + r.body.id; slot.replaceChildren(ruleForm(kind, r.body.id, (await ruleTypes())[kind])); return; }
    b.disabled = false;
    note.textContent = ' ' + refusal(r);
    const w = r && r.status === 409 ? await watchOf(kind, target) : null;
    if (w) slot.replaceChildren(ruleForm(kind, w.id, (await ruleTypes())[kind]));
  });
  return el('div', { class: 'watchbox' }, b, note, slot);
}

// watchOf is the watch of kind/target in GET /v1/watches (one bounded
// page), or null.
async function watchOf(kind, target) {
  const ws = await maybe('/v1/watches');
  return ((ws && ws.items) || []).find(w => w.kind === kind && w.target === target) || null;
}

// typesByKind groups the API's rule types (GET /v1/alert-rules'
// rule_types, in its order) by the watch kind they fit: kind → type → its
// threshold fields. The API checks their bounds and names the field it
// refuses.
const typesByKind = offers => {
  const out = {};
  for (const o of offers) (out[o.kind] = out[o.kind] || {})[o.type] = o.fields;
  return out;
};
let ruleTypesOnce;
const ruleTypes = () => ruleTypesOnce || (ruleTypesOnce = api('/v1/alert-rules').then(r => typesByKind(r.rule_types), e => { ruleTypesOnce = null; throw e; }));
const thresholdHints = { places: 'places moved', drop: 'stars fallen', reviews: 'reviews', window_hours: 'optional, 24', max_stars: 'optional, 5', rise: 'optional, 10' };
const thresholdNames = Object.keys(thresholdHints);

// field is a labelled control of the rule form with a place for the API's
// refusal of it.
function field(name, control) {
  return el('label', { class: 'field', 'data-field': name }, name, ' ', control, el('span', { class: 'fielderr err' }));
}

// ruleForm sets an alert rule on watch watchId: a type that fits the
// watch's kind (types: type → its threshold fields), that type's
// thresholds, the channel and its URL.
function ruleForm(kind, watchId, types) {
  const type = el('select', { name: 'type' }, Object.keys(types).map(t => el('option', { value: t }, t)));
  const thresholds = el('span', { class: 'thresholds' });
  const showThresholds = () => thresholds.replaceChildren(...types[type.value].map(f =>
    field(f, el('input', { name: f, type: 'number', step: 'any', placeholder: thresholdHints[f] }))));
  type.addEventListener('change', showThresholds);
  showThresholds();
  const channel = el('select', { name: 'channel' }, ['webhook', 'slack'].map(c => el('option', { value: c }, c)));
  const url = el('input', { name: 'url', type: 'url', placeholder: 'https://…', size: 40 });
  const form = el('form', { class: 'ruleform panel', novalidate: '', 'data-watch-id': watchId },
    el('b', {}, 'Alert me'), ' ', field('type', type), thresholds, field('channel', channel), field('url', url),
    el('button', { class: 'addrule' }, 'Add rule'), el('span', { class: 'formerr err' }), el('div', { class: 'ruleresult' }));
  form.addEventListener('submit', ev => { ev.preventDefault(); addRule(form, watchId); });
  return form;
}

// ruleBody is the form's rule: its thresholds as numbers, an empty
// optional one left out (the API's default).
function ruleBody(form, watchId) {
  const body = { type: form.elements.type.value, watch_id: watchId, channel: form.elements.channel.value, url: form.elements.url.value.trim() };
  for (const input of form.querySelectorAll('.thresholds input')) if (input.value !== '') body[input.name] = Number(input.value);
  return body;
}

// addRule posts the form's rule (POST /v1/alert-rules): a refusal shows
// next to the field it names; the rule made shows with its signing secret,
// which the API gives this once.
async function addRule(form, watchId) {
  const button = form.querySelector('button.addrule');
  const out = form.querySelector('.ruleresult');
  for (const e of form.querySelectorAll('.fielderr, .formerr')) e.textContent = '';
  out.replaceChildren();
  button.disabled = true;
  const r = await post('/v1/alert-rules', ruleBody(form, watchId));
  button.disabled = false;
  if (r && r.status === 201) { out.replaceChildren(ruleMade(r.body)); return; }
  const named = r && r.body && r.body.field;
  const at = (named && form.querySelector(`.field[data-field="${CSS.escape(named)}"] .fielderr`)) || form.querySelector('.formerr');
  at.textContent = ' ' + refusal(r);
}

function ruleMade(rule) {
  return el('div', { class: 'rulemade', 'data-rule-id': rule.id },
    el('p', {}, 'Rule ', el('b', { class: 'ruleid' }, rule.id), ': ', el('span', { class: 'ruletext' }, describeRule(rule))),
    el('p', {}, 'Signing secret ', el('code', { class: 'secret' }, rule.secret), ' ', el('b', {}, 'shown once — keep it')));
}

// describeRule is a rule in a line: its type, thresholds, channel and URL.
function describeRule(r) {
  return [r.type, ...thresholdNames.filter(f => r[f] != null).map(f => f + ' ' + r[f])].join(' ') + ' → ' + r.channel + ' ' + r.url;
}

function sparkline(values, w = 90, h = 22) {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('class', 'spark'); svg.setAttribute('width', w); svg.setAttribute('height', h);
  if (!values || values.length < 2) return el('span', { class: 'muted' }, '—');
  const lo = Math.min(...values), hi = Math.max(...values), span = hi - lo || 1;
  const pts = values.map((v, i) => (i * (w - 2) / (values.length - 1) + 1).toFixed(1) + ',' + (h - 1 - (v - lo) * (h - 2) / span).toFixed(1));
  const p = document.createElementNS(ns, 'polyline');
  p.setAttribute('points', pts.join(' ')); p.setAttribute('fill', 'none'); p.setAttribute('stroke', '#4f7cff'); p.setAttribute('stroke-width', '1.5');
  svg.append(p); return svg;
}

// chart draws series over time (xs: unix seconds) with uPlot, or as a table:
// without uPlot, or for one point in time (uPlot would stretch a lone point
// over years).
function chart(title, xs, series, opts = {}) {
  const box = el('div', { class: 'panel chart', 'data-chart': title }, el('b', {}, title));
  if (!xs.length) { box.append(el('p', { class: 'muted' }, 'no history yet')); return box; }
  if (window.uPlot && xs.length > 1) {
    const data = [xs, ...series.map(s => s.values)];
    // The y axis as wide as its longest label (uPlot's default clips "393,932").
    const ySize = (u, vals) => Math.max(50, 16 + 7 * Math.max(0, ...(vals || []).map(v => String(v).length)));
    const o = { width: Math.min(main.clientWidth - 40, 1000), height: 220, series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: ['#4f7cff', '#e8590c', '#2f9e44', '#ae3ec9', '#1098ad', '#f08c00'][i % 6], spanGaps: true }))],
      axes: [{}, { size: ySize }], scales: opts.invert ? { y: { dir: -1 } } : {} };
    requestAnimationFrame(() => new window.uPlot(o, data, box));
  } else {
    box.append(el('table', {}, el('tr', {}, el('th', {}, 'at'), series.map(s => el('th', { class: 'num' }, s.label))),
      xs.map((x, i) => el('tr', {}, el('td', {}, new Date(x * 1000).toISOString().slice(0, 10)), series.map(s => el('td', { class: 'num' }, fmt(s.values[i])))))));
  }
  return box;
}

function table(cols, rows, opts = {}) {
  const t = el('table', { class: opts.class || '' });
  const thead = el('tr', {}, cols.map(c => el('th', { class: (c.num ? 'num ' : '') + (c.sort ? 'sort' : ''), 'data-key': c.key,
    onclick: c.sort ? () => opts.onSort(c.key) : null }, c.label)));
  t.append(thead, ...rows.map(r => el('tr', {}, cols.map(c => el('td', { class: c.num ? 'num' : '' }, c.cell ? c.cell(r) : fmt(r[c.key]))))));
  return t;
}

// pager lists pages of a list route: render(items) returns rows appended to
// into; "more" follows next_cursor.
function pager(base, render, into) {
  const more = el('button', { class: 'more' }, 'more');
  let cursor = '';
  async function load() {
    more.disabled = true;
    const page = await api(base + (base.includes('?') ? '&' : '?') + (cursor ? 'cursor=' + enc(cursor) : ''));
    render(page.items);
    cursor = page.next_cursor || '';
    more.disabled = false; more.hidden = !cursor;
  }
  more.addEventListener('click', load);
  into.after(more);
  return load();
}

function exports(base) {
  const sep = base.includes('?') ? '&' : '?';
  return el('p', { class: 'muted' }, 'export: ', el('a', { href: base + sep + 'format=csv' }, 'CSV'), ' · ', el('a', { href: base + sep + 'format=ndjson' }, 'NDJSON'));
}

// Markets: the live market segments (GET /v1/segments), in the API's order
// by opportunity, demand or trend (?sort=), each with its 30-day demand
// sparkline; today's keyword opportunities until the first segments exist.
const segmentSorts = ['opportunity', 'demand', 'trend'];
async function marketsPage() {
  document.title = 'Markets · storecrawl';
  const asked = new URLSearchParams(location.search).get('sort');
  const sort = segmentSorts.includes(asked) ? asked : 'opportunity';
  const base = '/v1/segments?sort=' + sort + '&limit=50';
  const num = (key, label, get) => ({ key, label, num: 1, sort: segmentSorts.includes(key), cell: r => fmt(get(r)) });
  const cols = [
    { key: 'name', label: 'market', cell: r => el('a', { href: '/app/markets/' + r.id }, r.name) },
    num('opportunity', 'opportunity', r => r.scores.opportunity),
    num('demand', 'demand', r => r.scores.demand),
    { key: 'trend', label: 'trend', sort: 1, cell: r => el('span', { class: 'trend' }, r.trend) },
    { key: 'sparkline', label: '30 days', cell: r => sparkline(r.sparkline) },
    num('keyword_count', 'keywords', r => r.keyword_count),
    num('app_count', 'apps', r => r.scores.app_count),
    num('total_ratings', 'ratings', r => r.scores.total_ratings),
    num('fragmentation', 'fragmentation', r => r.scores.fragmentation),
    num('quality_gap', 'quality gap', r => r.scores.quality_gap),
  ];
  const rows = [];
  const holder = el('div');
  const draw = () => {
    holder.replaceChildren(table(cols, rows, { class: 'markets segments', onSort: k => { location.search = '?sort=' + k; } }));
    holder.querySelector(`th[data-key="${sort}"]`).classList.add('sorted');
  };
  main.replaceChildren(el('h1', {}, 'Markets'),
    el('p', { class: 'muted' }, 'Market segments: keywords whose top apps overlap. Opportunity is demand × fragmentation × quality gap (0–100); the sparkline is the last 30 days of demand. Sorted by ',
      el('b', { class: 'sortedby' }, sort), '; click opportunity, demand or trend to sort.'), holder);
  let none = false;
  await pager(base, items => { none = !rows.length && !items.length; rows.push(...items); draw(); }, holder);
  if (none) await opportunitiesPage();
}

// opportunitiesPage: today's keyword markets by opportunity, the Markets
// page while no segments are built; sortable (what is loaded) by
// opportunity, demand and trend.
async function opportunitiesPage() {
  document.title = 'Markets · storecrawl';
  const rows = [];
  let key = 'opportunity_score';
  const holder = el('div');
  const draw = () => {
    rows.sort((a, b) => (b[key] ?? -Infinity) - (a[key] ?? -Infinity));
    holder.replaceChildren(table([
      { key: 'cluster_id', label: 'market', cell: r => el('a', { href: '/app/markets/' + enc(r.cluster_id) }, r.cluster_id) },
      { key: 'opportunity_score', label: 'opportunity', num: 1, sort: 1 },
      { key: 'demand', label: 'demand', num: 1, sort: 1 },
      { key: 'trend', label: 'trend', num: 1, sort: 1, cell: r => fmt(r.trend) },
      { key: 'history', label: '30 days', cell: r => sparkline((r.history || []).map(h => typeof h === 'number' ? h : h.opportunity_score)) },
      { key: 'fragmentation', label: 'fragmentation', num: 1 },
      { key: 'quality_gap', label: 'quality gap', num: 1 },
      { key: 'app_count', label: 'apps', num: 1 },
      { key: 'total_ratings', label: 'ratings', num: 1 },
    ], rows, { class: 'markets opportunities', onSort: k => { key = k; draw(); } }));
  };
  main.replaceChildren(el('h1', {}, 'Markets'), el('p', { class: 'muted' }, 'No market segments yet: keyword markets by opportunity (demand × fragmentation × quality gap, 0–100) until the first are built. Click a column to sort what is loaded.'), holder, exports('/v1/opportunities'));
  draw();
  await pager('/v1/opportunities?limit=50', items => { rows.push(...items); draw(); }, holder);
}

// MaxMarketLookups bounds the keywords a segment's page tries for a
// keyword market (its complaint themes and brief): its name, then its
// first keywords.
const MaxMarketLookups = 3;

// keywordMarket is the first of terms that is a keyword market (GET
// /v1/clusters/{id}), or null.
async function keywordMarket(terms) {
  for (const t of [...new Set(terms)].slice(0, MaxMarketLookups)) if (await maybe('/v1/clusters/' + enc(t))) return t;
  return null;
}

// MaxNamedApps is how many of a segment's apps get their name looked up
// (one GET /v1/apps/{id} each); the rest are listed by track id.
const MaxNamedApps = 10;

// A segment (a Watch button): its scores with their parts, keywords, apps with their share,
// neighbours, daily snapshots; complaint themes and the analyst's brief of
// the keyword market of its name or first keywords where there is one. False when there is
// no such segment (a numeric keyword's market is the caller's then).
async function segmentPage(id) {
  const g = await maybe('/v1/segments/' + enc(id));
  if (!g) return false;
  document.title = g.name + ' · storecrawl';
  const sc = g.scores;
  const [market, ...named] = await Promise.all([keywordMarket([g.name, ...(g.keywords || [])]),
    ...(g.apps || []).slice(0, MaxNamedApps).map(a => maybe('/v1/apps/' + a.track_id))]);
  const [themes, brief, evaluation] = await Promise.all([market ? maybe('/v1/clusters/' + enc(market) + '/themes') : null,
    market ? maybe('/v1/opportunities/' + enc(market) + '/brief') : null, maybe('/v1/segments/' + enc(g.id ?? id) + '/evaluation')]);
  const names = Object.fromEntries(named.map((a, i) => [g.apps[i].track_id, a && a.name]).filter(([, n]) => n));
  const card = (label, v, note) => el('div', { class: 'card', 'data-score': label }, el('span', { class: 'muted' }, label), el('b', {}, v), note ? el('small', { class: 'muted' }, note) : null);
  const snaps = (g.snapshots || []).slice().reverse();
  const neighbours = g.relations || [];
  main.replaceChildren(
    el('h1', {}, 'Market: ', g.name),
    el('p', { class: 'muted' }, fmt(g.keyword_count), ' keywords · trend ', el('b', { class: 'trend' }, g.trend), g.retired_at ? ' · retired ' + g.retired_at.slice(0, 10) : ''),
    watchButton('segment', String(g.id ?? id)),
    el('div', { class: 'cards' },
      card('opportunity', fmt(sc.opportunity, 1), '0–100'), card('demand', fmt(sc.demand), 'log10(1 + ratings)'),
      card('fragmentation', fmt(sc.fragmentation), '1 − HHI'), card('hhi', fmt(sc.hhi), 'concentration'), card('quality gap', fmt(sc.quality_gap), 'under the bar'),
      card('competitiveness', fmt(sc.competitiveness)), card('apps', fmt(sc.app_count)), card('ratings', fmt(sc.total_ratings)), card('avg rating', fmt(sc.avg_rating)),
      card('leaders velocity 7d', fmt(sc.leaders_velocity_7d)), card('leaders velocity 30d', fmt(sc.leaders_velocity_30d))),
    chart('demand and opportunity', snaps.map(p => secs(p.day)), [{ label: 'demand', values: snaps.map(p => p.demand) }, { label: 'opportunity', values: snaps.map(p => p.opportunity) }]),
    el('h2', {}, 'Evaluation'), evaluationPanel(g.id ?? id, evaluation),
    el('h2', {}, 'Brief'),
    brief && brief.headline ? el('div', { class: 'panel brief' }, el('b', {}, brief.headline), el('p', { class: 'notes' }, typeof brief.brief === 'string' ? brief.brief : JSON.stringify(brief.brief, null, 1)),
      el('a', { href: '/v1/opportunities/' + enc(market) + '/brief' }, 'the brief as JSON'))
      : el('p', { class: 'muted brief' }, 'No brief yet (the analyst writes them for the top opportunities).'),
    el('h2', {}, 'Apps'),
    table([{ key: 'name', label: 'app', cell: r => el('a', { href: '/app/apps/' + r.track_id }, names[r.track_id] || String(r.track_id)) },
      { key: 'keywords', label: 'keywords topped', num: 1 }, { key: 'ratings', label: 'ratings', num: 1 },
      { key: 'share', label: 'share', cell: r => el('span', {}, el('span', { class: 'bar', 'data-w': r.share }), ' ', pct(r.share)) }], g.apps || [], { class: 'members' }),
    el('h2', {}, 'Keywords'),
    el('ul', { class: 'keywords' }, (g.keywords || []).map(k => el('li', {}, el('a', { href: '/app/keywords/' + enc(k) }, k)))),
    el('h2', {}, 'Complaint themes'), market ? el('p', { class: 'muted' }, 'of the keyword market ', el('a', { href: '/app/markets/' + enc(market) }, market)) : null, themesPanel(themes),
    el('h2', {}, 'Neighbouring markets'),
    neighbours.length ? el('ul', { class: 'neighbours' }, neighbours.map(n => el('li', {}, el('a', { href: '/app/markets/' + n.segment_id }, 'market ' + n.segment_id), ' — ', fmt(n.shared_apps), ' apps shared')))
      : el('p', { class: 'muted' }, 'none found'));
  for (const b of main.querySelectorAll('.bar')) b.style.width = (Number(b.dataset.w) * 120).toFixed(0) + 'px';
  if (themes) exampleReviews(themes);
  return true;
}

// evaluationPanel shows a segment's evaluation (GET /v1/segments/{id}/evaluation):
// the synthesis, the marketing methods' fit with their reasons and the
// critic's verdict, its state and cost; "not yet" when there is none.
function evaluationPanel(id, ev) {
  if (!ev) return el('p', { class: 'muted evaluation' }, 'No evaluation yet (the analyst evaluates the top segments by opportunity).');
  const out = Object.fromEntries((ev.steps || []).filter(st => st.state === 'done').map(st => [st.name, st.output || {}]));
  const syn = out.synthesis, methods = (out.methods && out.methods.methods) || [], critic = out.critic;
  return el('div', { class: 'panel evaluation', 'data-state': ev.state },
    el('p', { class: 'muted' }, ev.state, ' · ', (ev.steps || []).filter(st => st.state === 'done').length, ' of ', (ev.steps || []).length, ' steps · $', ((ev.cost_micro_usd || 0) / 1e6).toFixed(4)),
    syn ? el('div', {}, el('p', {}, el('b', {}, 'Opportunity: '), syn.opportunity), el('p', {}, el('b', {}, 'Build: '), syn.app_to_build),
      el('p', {}, el('b', {}, 'First users: '), syn.first_users)) : null,
    methods.length ? table([{ key: 'method', label: 'method' }, { key: 'score', label: 'fit', num: 1 }, { key: 'reason', label: 'why' }], methods, { class: 'methods' }) : null,
    critic ? el('p', { class: 'notes' }, el('b', {}, 'Critic (', critic.verdict, '): '), critic.summary) : null,
    el('a', { href: '/v1/segments/' + enc(id) + '/evaluation' }, 'every step, its input and cost, as JSON'));
}

// A keyword market (the Markets page's fallback): scores with their parts,
// keyword, apps with their share, complaint themes with example reviews,
// the analyst's brief, neighbours.
async function marketPage(id) {
  if (/^[1-9][0-9]*$/.test(id) && await segmentPage(id)) return;
  document.title = id + ' · storecrawl';
  const m = await maybe('/v1/clusters/' + enc(id));
  if (!m) { main.replaceChildren(el('h1', {}, id), el('p', {}, 'No market for this keyword yet. ', el('a', { href: '/app/keywords/' + enc(id) }, 'The keyword'))); return; }
  const [themes, brief] = await Promise.all([maybe('/v1/clusters/' + enc(id) + '/themes'), maybe('/v1/opportunities/' + enc(id) + '/brief')]);
  const card = (label, v, note) => el('div', { class: 'card', 'data-score': label }, el('span', { class: 'muted' }, label), el('b', {}, v), note ? el('small', { class: 'muted' }, note) : null);
  const members = m.members || [];
  main.replaceChildren(
    el('h1', {}, 'Market: ', m.cluster_id),
    el('p', {}, 'keyword ', el('a', { href: '/app/keywords/' + enc(m.cluster_id) }, m.cluster_id)),
    el('div', { class: 'cards' },
      card('opportunity', fmt(m.opportunity_score, 1), '0–100'), card('demand', fmt(m.demand), 'log10(1 + ratings)'),
      card('fragmentation', fmt(m.fragmentation), '1 − HHI'), card('quality gap', fmt(m.quality_gap), 'under the bar'),
      card('apps', fmt(m.app_count)), card('ratings', fmt(m.total_ratings)), card('avg rating', fmt(m.avg_rating))),
    el('h2', {}, 'Brief'),
    brief && brief.headline ? el('div', { class: 'panel brief' }, el('b', {}, brief.headline), el('p', { class: 'notes' }, typeof brief.brief === 'string' ? brief.brief : JSON.stringify(brief.brief, null, 1)))
      : el('p', { class: 'muted brief' }, 'No brief yet (the analyst writes them for the top opportunities).'),
    el('h2', {}, 'Apps'),
    table([{ key: 'rank', label: 'rank', num: 1 }, { key: 'name', label: 'app', cell: r => el('a', { href: '/app/apps/' + r.track_id }, r.name || r.track_id) },
      { key: 'developer_name', label: 'developer' }, { key: 'rating_count', label: 'ratings', num: 1 }, { key: 'average_rating', label: 'rating', num: 1 },
      { key: 'share', label: 'share', cell: r => el('span', {}, el('span', { class: 'bar', style: null, 'data-w': r.share }), ' ', pct(r.share)) }], members, { class: 'members' }),
    el('h2', {}, 'Complaint themes'), themesPanel(themes),
    el('h2', {}, 'Neighbouring markets'),
    (m.neighbours || []).length ? el('ul', { class: 'neighbours' }, m.neighbours.map(n => el('li', {}, el('a', { href: '/app/markets/' + enc(n.cluster_id) }, n.cluster_id), ' — ', n.shared_apps, ' apps shared, opportunity ', fmt(n.opportunity_score, 1))))
      : el('p', { class: 'muted' }, 'none found'));
  for (const b of main.querySelectorAll('.bar')) b.style.width = (Number(b.dataset.w) * 120).toFixed(0) + 'px';
  if (themes) exampleReviews(themes);
}

function themesPanel(t) {
  if (!t || !(t.themes || []).length) return el('p', { class: 'muted themes' }, 'No complaint themes yet (they come from stored reviews).');
  return el('div', { class: 'themes' }, el('p', { class: 'muted' }, 'from ', fmt(t.reviews), ' reviews'),
    t.themes.map(th => el('div', { class: 'panel theme', 'data-examples': (th.example_ids || []).join(' ') }, el('b', {}, th.phrase), ' ',
      el('span', { class: 'muted' }, fmt(th.reviews), ' reviews, ', pct(th.share), ' of all, ', pct(th.negative_share), ' negative'), el('ul', { class: 'examples' }))));
}

// exampleReviews fills each theme's example reviews from its apps' stored
// reviews (one page of the first three apps named).
async function exampleReviews(t) {
  const apps = [...new Set(t.themes.flatMap(th => th.app_ids || []))].slice(0, 3);
  const byID = {};
  for (const a of apps) { const p = await maybe('/v1/apps/' + a + '/reviews?limit=100'); for (const r of (p && p.items) || []) byID[r.id] = r; }
  for (const box of main.querySelectorAll('.theme')) {
    const ul = box.querySelector('.examples');
    for (const id of box.dataset.examples.split(' ').filter(Boolean).slice(0, 3)) {
      const r = byID[id];
      if (r) ul.append(el('li', {}, '★'.repeat(r.rating), ' ', el('b', {}, r.title), ' — ', r.body.slice(0, 280)));
    }
  }
}

const secs = s => Math.floor(Date.parse(s) / 1000);

// An app (a Watch button): its record, then its history as charts, versions, prices, reviews
// and similar apps.
async function appPage(id) {
  const [a, h] = await Promise.all([maybe('/v1/apps/' + enc(id)), maybe('/v1/apps/' + enc(id) + '/history?days=365&limit=500')]);
  if (!a) { main.replaceChildren(el('h1', {}, 'No app ', id)); return; }
  document.title = (a.name || id) + ' · storecrawl';
  const ratings = ((h && h.ratings) || []).slice().reverse();
  const kr = ((h && h.keyword_ranks) || []).slice().reverse();
  const cr = ((h && h.chart_ranks) || []).slice().reverse();
  const byKey = (list, key, at) => { const xs = [...new Set(list.map(at))].sort((x, y) => x - y); const keys = [...new Set(list.map(key))].slice(0, 6);
    return [xs, keys.map(k => ({ label: k, values: xs.map(x => { const e = list.find(r => key(r) === k && at(r) === x); return e ? e.rank : null; }) }))]; };
  const [kx, ks] = byKey(kr, r => r.keyword, r => secs(r.day));
  const [cx, cs] = byKey(cr, r => r.collection + ' ' + r.country, r => secs(r.at));
  main.replaceChildren(
    el('h1', {}, a.name || id), el('p', { class: 'muted' }, a.developer_name || '', ' · ', a.genre || '', ' · ', a.subtitle || ''),
    watchButton('app', String(a.track_id ?? Number(id))),
    el('div', { class: 'cards record' },
      ...[['rating count', a.rating_count], ['average rating', a.average_rating], ['price', a.price], ['version', a.version], ['in-app purchases', a.iap_count]]
        .map(([k, v]) => el('div', { class: 'card', 'data-field': k }, el('span', { class: 'muted' }, k), el('b', {}, fmt(v))))),
    chart('rating count', ratings.map(r => secs(r.at)), [{ label: 'rating count', values: ratings.map(r => r.rating_count) }]),
    chart('average rating', ratings.map(r => secs(r.at)), [{ label: 'average rating', values: ratings.map(r => r.average_rating) }]),
    chart('keyword ranks', kx, ks, { invert: 1 }), chart('chart ranks', cx, cs, { invert: 1 }),
    el('h2', {}, 'Versions'), el('ul', { class: 'timeline versions' }, ((h && h.versions) || []).map(v => el('li', {}, el('b', {}, v.version), ' ', el('span', { class: 'muted' }, (v.release_date || v.at || '').slice(0, 10)), v.release_notes ? el('div', { class: 'notes' }, v.release_notes) : null))),
    el('h2', {}, 'Price changes'), el('ul', { class: 'prices' }, ((h && h.prices) || []).map(p => el('li', {}, (p.at || '').slice(0, 10), ': ', fmt(p.price), ' ', p.currency || ''))),
    el('h2', {}, 'Reviews'), el('div', { class: 'reviews' }),
    el('h2', {}, 'Similar apps'), el('ul', { class: 'similar' }, (a.similar_app_ids || []).slice(0, 20).map(s => el('li', {}, el('a', { href: '/app/apps/' + s }, s)))));
  const rv = main.querySelector('.reviews');
  await pager('/v1/apps/' + enc(id) + '/reviews?limit=20', items => rv.append(...items.map(r => el('div', { class: 'panel review' },
    '★'.repeat(r.rating), ' ', el('b', {}, r.title), ' ', el('span', { class: r.sentiment >= 0 ? 'pos' : 'neg' }, 'sentiment ', fmt(r.sentiment)), ' ', el('span', { class: 'muted' }, (r.reviewed_at || '').slice(0, 10), ' v', r.version),
    el('div', { class: 'notes' }, r.body)))), rv);
}

// A keyword: its metrics (GET /v1/keywords/{term} when the API has it), its
// market and rankings, the top apps' rank history for it; a Watch button.
async function keywordPage(term) {
  document.title = term + ' · storecrawl';
  const [kw, m, found] = await Promise.all([maybe('/v1/keywords/' + enc(term)), maybe('/v1/clusters/' + enc(term)), maybe('/v1/search?kind=keywords&limit=1&q=' + enc(term))]);
  const stats = ((found && found.items) || []).find(k => k.keyword === term);
  const metrics = kw ? el('div', { class: 'cards metrics' }, ['popularity', 'difficulty', 'demand'].filter(k => kw[k] != null).map(k => el('div', { class: 'card' }, el('span', { class: 'muted' }, k), el('b', {}, fmt(kw[k])))))
    : el('p', { class: 'muted metrics' }, 'Popularity and difficulty are not measured for this keyword yet.');
  const members = (m && m.members) || [];
  main.replaceChildren(el('h1', {}, 'Keyword: ', term), watchButton('keyword', term), metrics,
    el('p', {}, stats ? ['results ', fmt(stats.result_count), ', searched ', (stats.searched_at || 'never').slice(0, 10), ' · '] : null,
      m ? el('a', { href: '/app/markets/' + enc(term) }, 'market (opportunity ' + fmt(m.opportunity_score, 1) + ')') : 'no market yet'),
    el('h2', {}, 'Top apps'), table([{ key: 'rank', label: 'rank', num: 1 }, { key: 'name', label: 'app', cell: r => el('a', { href: '/app/apps/' + r.track_id }, r.name || r.track_id) },
      { key: 'rating_count', label: 'ratings', num: 1 }, { key: 'share', label: 'share', cell: r => pct(r.share) }], members, { class: 'rankings' }),
    el('div', { class: 'rankhistory' }));
  const top = members.slice(0, 5);
  const hs = await Promise.all(top.map(a => maybe('/v1/apps/' + a.track_id + '/history?days=30')));
  const pts = hs.flatMap((h, i) => ((h && h.keyword_ranks) || []).filter(r => r.keyword === term).map(r => ({ app: top[i].name || String(top[i].track_id), x: secs(r.day), rank: r.rank })));
  const xs = [...new Set(pts.map(p => p.x))].sort((a, b) => a - b);
  main.querySelector('.rankhistory').replaceWith(chart('rank history (30 days)', xs, top.map(a => a.name || String(a.track_id)).map(n => ({ label: n, values: xs.map(x => { const p = pts.find(q => q.app === n && q.x === x); return p ? p.rank : null; }) })), { invert: 1 }));
}

// Search: apps by the start of their name, developer or subtitle; keywords by prefix.
async function searchPage() {
  const q = new URLSearchParams(location.search).get('q') || '';
  document.title = 'Search · storecrawl';
  const input = el('input', { name: 'q', value: q, id: 'q', placeholder: 'start of a name, developer, subtitle or keyword' });
  main.replaceChildren(el('h1', {}, 'Search'), el('form', { action: '/app/search' }, input, ' ', el('button', {}, 'Search')));
  if (!q) return;
  const apps = el('table', { class: 'apps' }, el('tr', {}, el('th', {}, 'app'), el('th', {}, 'developer'), el('th', {}, 'matched'), el('th', { class: 'num' }, 'ratings')));
  const kws = el('ul', { class: 'keywords' });
  main.append(el('h2', {}, 'Apps'), apps, el('h2', {}, 'Keywords'), kws);
  await Promise.all([
    pager('/v1/search?kind=apps&q=' + enc(q), items => apps.append(...items.map(a => el('tr', {}, el('td', {}, el('a', { href: '/app/apps/' + a.track_id }, a.name)), el('td', {}, a.developer_name), el('td', {}, a.matched), el('td', { class: 'num' }, fmt(a.rating_count))))), apps),
    pager('/v1/search?kind=keywords&q=' + enc(q), items => kws.append(...items.map(k => el('li', {}, el('a', { href: '/app/keywords/' + enc(k.keyword) }, k.keyword), ' ', el('span', { class: 'muted' }, k.has_market ? 'market, opportunity ' + fmt(k.opportunity_score, 1) : '')))), kws),
  ]);
}

// Alerts: what the rules made, newest first (GET /v1/alerts), with their
// delivery state and the text the channel received; then the watches with
// their rules.
async function alertsPage() {
  document.title = 'Alerts · storecrawl';
  const t = el('table', { class: 'alerts' }, el('tr', {}, ['alert', 'type', 'watch', 'made', 'state', 'attempts'].map(h => el('th', {}, h)), el('th', {}, 'text')));
  const watches = el('div', { class: 'watches' });
  main.replaceChildren(el('h1', {}, 'Alerts'), el('p', { class: 'muted' }, 'What the alert rules made, newest first, and whether their channel took them.'), t,
    el('h2', {}, 'Watches'), el('p', { class: 'muted' }, 'What is watched and the rules that apply to it. Watch a keyword, app or market on its page; its "Alert me" form sets a rule.'), watches);
  await Promise.all([watchesList(watches), pager('/v1/alerts?limit=50', items => t.append(...items.map(a => el('tr', { 'data-id': a.id },
    el('td', { class: 'num' }, a.id), el('td', {}, a.type),
    el('td', {}, a.payload && a.payload.watch ? a.payload.watch.kind + ' ' + a.payload.watch.target : fmt(a.watch_id)),
    el('td', {}, (a.created_at || '').slice(0, 19).replace('T', ' ')), el('td', { class: 'state' }, a.state), el('td', { class: 'num' }, fmt(a.attempts)),
    el('td', { class: 'text' }, (a.payload && a.payload.text) || '')))), t)]);
}

const watchHref = w => ({ app: '/app/apps/', keyword: '/app/keywords/', segment: '/app/markets/' })[w.kind] + enc(w.target);

// rulesOf are the rules that apply to watch w: those limited to it and
// those of every watch of its kind.
const rulesOf = (w, rules, types) => rules.filter(r => r.watch_id === w.id || (r.watch_id == null && r.type in types[w.kind]));

// watchesList fills into with the watches (GET /v1/watches, one bounded
// page) and their rules (GET /v1/alert-rules), each watch with a Delete
// button.
async function watchesList(into) {
  const [ws, rs] = await Promise.all([api('/v1/watches'), api('/v1/alert-rules')]);
  if (!ws.items.length) { into.replaceChildren(el('p', { class: 'muted' }, 'No watches yet.')); return; }
  into.replaceChildren(el('table', { class: 'watches' }, el('tr', {}, ['watch', 'kind', 'target', 'since', 'rules', ''].map(h => el('th', {}, h))),
    ws.items.map(w => watchRow(w, rulesOf(w, rs.items, typesByKind(rs.rule_types))))));
}

function watchRow(w, rules) {
  const row = el('tr', { 'data-id': w.id });
  const del = el('button', { class: 'delete', type: 'button', onclick: () => deleteWatch(w, row) }, 'Delete');
  row.append(el('td', { class: 'num' }, w.id), el('td', {}, w.kind), el('td', {}, el('a', { href: watchHref(w) }, w.target)),
    el('td', {}, (w.created_at || '').slice(0, 10)),
    el('td', {}, rules.length ? el('ul', { class: 'rules' }, rules.map(r => el('li', { 'data-rule-id': r.id }, describeRule(r),
      r.watch_id == null ? el('span', { class: 'muted' }, ' (every ', w.kind, ' watch)') : null, r.waiting ? el('span', { class: 'muted' }, ' — ', r.waiting) : null)))
      : el('span', { class: 'muted' }, 'none')),
    el('td', {}, del, el('span', { class: 'err delnote' })));
  return row;
}

// deleteWatch deletes watch w and the rules limited to it (DELETE
// /v1/watches/{id}) once the person confirms; its alerts stay.
async function deleteWatch(w, row) {
  if (!confirm(`Delete watch ${w.id} (${w.kind} ${w.target}) and the rules limited to it?`)) return;
  const r = await send('DELETE', '/v1/watches/' + w.id);
  if (r && r.status === 200) { row.remove(); return; }
  row.querySelector('.delnote').textContent = ' ' + refusal(r);
}

async function route() {
  const p = decodeURIComponent(location.pathname.replace(/^\/app\/?/, '')).replace(/\/$/, '');
  const [kind, ...rest] = p.split('/');
  const arg = rest.join('/');
  try {
    if (kind === '' || (kind === 'markets' && !arg)) await marketsPage();
    else if (kind === 'markets') await marketPage(arg);
    else if (kind === 'apps') await appPage(arg);
    else if (kind === 'keywords') await keywordPage(arg);
    else if (kind === 'search') await searchPage();
    else if (kind === 'alerts' && !arg) await alertsPage();
    else main.replaceChildren(el('h1', {}, 'Not found'));
    document.body.dataset.ready = '1';
  } catch (e) {
    if (e.status !== 401) main.append(el('p', { class: 'err' }, 'Could not load: ', e.message));
    document.body.dataset.ready = 'error';
  }
}
route();
