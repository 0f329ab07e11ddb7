package alerts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"storecrawl/worker/d1"
)

// Sender puts one message on the queue (cf.Queue under workerd).
type Sender interface {
	Send(ctx context.Context, body string) error
}

// Service is the alerts' D1 side: watches, rules, alerts, the evaluation
// and the delivery.
type Service struct {
	DB     *d1.DB
	Events Sender
	// AllowLoopback is ALLOW_LOOPBACK_WEBHOOKS: webhooks on loopback are
	// accepted (`make dev`, the integration tests).
	AllowLoopback bool
	// HTTP posts the deliveries (cf.Fetcher under workerd).
	HTTP Doer
}

// Watch is a watch as the API shows it.
type Watch struct {
	ID        int64  `json:"id"`
	Kind      string `json:"kind"`
	Target    string `json:"target"`
	CreatedAt string `json:"created_at"`
	// SearchedAt is a keyword watch's last evaluated search (null before).
	SearchedAt *string `json:"searched_at,omitempty"`

	createdMs int64
	ranks     string
}

type watchRow struct {
	ID         int64   `json:"id"`
	Kind       string  `json:"kind"`
	Target     string  `json:"target"`
	CreatedAt  string  `json:"created_at"`
	CreatedMs  int64   `json:"created_ms"`
	SearchedAt *string `json:"searched_at"`
	Ranks      *string `json:"ranks"`
}

func (r watchRow) watch() Watch {
	w := Watch{ID: r.ID, Kind: r.Kind, Target: r.Target, CreatedAt: r.CreatedAt, SearchedAt: r.SearchedAt, createdMs: r.CreatedMs}
	if r.Ranks != nil {
		w.ranks = *r.Ranks
	}
	return w
}

const watchesSQL = `SELECT id, kind, target, created_at, created_ms, searched_at, ranks FROM alert_watches ORDER BY id LIMIT ?1`

// Watches lists every watch (at most MaxWatches), oldest first.
func (s *Service) Watches(ctx context.Context) ([]Watch, error) {
	var rows []watchRow
	if err := s.DB.Query(ctx, &rows, watchesSQL, MaxWatches); err != nil {
		return nil, err
	}
	out := make([]Watch, len(rows))
	for i, r := range rows {
		out[i] = r.watch()
	}
	return out, nil
}

// AddWatch adds a checked watch (DecodeWatch). One already there, or one
// past MaxWatches, is an *ErrConflict naming target.
func (s *Service) AddWatch(ctx context.Context, in WatchInput, now time.Time) (Watch, error) {
	var rows []watchRow
	// The existing one (unique index) and the count, bounded by the
	// bound: at most MaxWatches+1 rows of the primary key.
	err := s.DB.Query(ctx, &rows, `SELECT id, kind, target, created_at, created_ms, searched_at, ranks FROM alert_watches WHERE kind = ?1 AND target = ?2
UNION ALL SELECT -1, '', '', '', (SELECT count(*) FROM (SELECT 1 FROM alert_watches LIMIT ?3)), NULL, NULL`, in.Kind, in.Target, MaxWatches)
	if err != nil {
		return Watch{}, err
	}
	for _, r := range rows {
		if r.ID > 0 {
			return r.watch(), &ErrConflict{FieldError{Field: "target", Msg: fmt.Sprintf("a %s watch of %q exists already (id %d)", in.Kind, in.Target, r.ID)}}
		}
		if r.CreatedMs >= MaxWatches {
			return Watch{}, &ErrConflict{FieldError{Field: "target", Msg: fmt.Sprintf("at most %d watches; delete one first", MaxWatches)}}
		}
	}
	var added []watchRow
	err = s.DB.Query(ctx, &added, `INSERT INTO alert_watches (kind, target, created_at, created_ms) VALUES (?1, ?2, ?3, ?4)
RETURNING id, kind, target, created_at, created_ms, searched_at, ranks`, in.Kind, in.Target, d1.Time(now), now.UnixMilli())
	if err != nil {
		return Watch{}, err
	}
	if len(added) != 1 {
		return Watch{}, errors.New("alerts: insert returned no watch")
	}
	return added[0].watch(), nil
}

// DeleteWatch deletes a watch and the rules limited to it (ErrNotFound
// when there is none); its alerts stay.
func (s *Service) DeleteWatch(ctx context.Context, id int64) error {
	var gone []struct {
		ID int64 `json:"id"`
	}
	if err := s.DB.Query(ctx, &gone, `DELETE FROM alert_watches WHERE id = ?1 RETURNING id`, id); err != nil {
		return err
	}
	if len(gone) == 0 {
		return ErrNotFound
	}
	_, err := s.DB.Exec(ctx, d1.Stmt{SQL: `DELETE FROM alert_rules WHERE watch_id = ?1`, Args: []any{id}})
	return err
}

// Rule is a rule as the API shows it. Secret is shown once, in the answer
// to its creation.
type Rule struct {
	ID      int64  `json:"id"`
	Type    string `json:"type"`
	WatchID *int64 `json:"watch_id"`
	Params
	Channel   string `json:"channel"`
	URL       string `json:"url"`
	Secret    string `json:"secret,omitempty"`
	CreatedAt string `json:"created_at"`
	// This hour's storm count.
	SentThisHour       int `json:"sent_this_hour"`
	SuppressedThisHour int `json:"suppressed_this_hour"`
	// Waiting says why the rule cannot be evaluated yet (segment_heating).
	Waiting string `json:"waiting,omitempty"`

	count HourCount
}

type ruleRow struct {
	ID             int64  `json:"id"`
	Type           string `json:"type"`
	WatchID        *int64 `json:"watch_id"`
	Params         string `json:"params"`
	Channel        string `json:"channel"`
	URL            string `json:"url"`
	CreatedAt      string `json:"created_at"`
	Hour           int64  `json:"hour"`
	HourSent       int    `json:"hour_sent"`
	HourSuppressed int    `json:"hour_suppressed"`
}

// SegmentsWaiting is what a segment_heating rule says until segment
// snapshots exist to evaluate it against.
const SegmentsWaiting = "segment snapshots are not built yet: the rule is kept and evaluated once they are"

func (r ruleRow) rule(hour int64) Rule {
	out := Rule{ID: r.ID, Type: r.Type, WatchID: r.WatchID, Channel: r.Channel, URL: r.URL, CreatedAt: r.CreatedAt,
		count: HourCount{Hour: r.Hour, Sent: r.HourSent, Suppressed: r.HourSuppressed}}
	json.Unmarshal([]byte(r.Params), &out.Params)
	if r.Hour == hour {
		out.SentThisHour, out.SuppressedThisHour = r.HourSent, r.HourSuppressed
	}
	if r.Type == SegmentHeating {
		out.Waiting = SegmentsWaiting
	}
	return out
}

const rulesSQL = `SELECT id, type, watch_id, params, channel, url, created_at, hour, hour_sent, hour_suppressed FROM alert_rules ORDER BY id LIMIT ?1`

// Rules lists every rule (at most MaxRules), oldest first, secrets left out.
func (s *Service) Rules(ctx context.Context, now time.Time) ([]Rule, error) {
	var rows []ruleRow
	if err := s.DB.Query(ctx, &rows, rulesSQL, MaxRules); err != nil {
		return nil, err
	}
	out := make([]Rule, len(rows))
	for i, r := range rows {
		out[i] = r.rule(hourOf(now))
		out[i].URL = MaskURL(r.URL)
	}
	return out, nil
}

// MaskURL is a webhook URL as a listing shows it: its scheme and host,
// its path hidden (a Slack webhook's path is its credential).
func MaskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "…"
	}
	return u.Scheme + "://" + u.Host + "/…"
}

func hourOf(t time.Time) int64 { return t.Unix() / 3600 }

// AddRule adds a decoded rule (DecodeRule): its URL is checked
// (CheckWebhookURL), its watch must exist and be of the type's kind (a
// *FieldError naming url or watch_id), and at most MaxRules are kept (an
// *ErrConflict naming type). The answer carries the rule's new secret.
func (s *Service) AddRule(ctx context.Context, in RuleInput, now time.Time) (Rule, error) {
	if fe := CheckWebhookURL(in.URL, s.AllowLoopback); fe != nil {
		return Rule{}, fe
	}
	watchID := int64(0)
	if in.WatchID != nil {
		watchID = *in.WatchID
	}
	var facts []struct {
		Kind  *string `json:"kind"`
		Rules int     `json:"rules"`
	}
	err := s.DB.Query(ctx, &facts, `SELECT (SELECT kind FROM alert_watches WHERE id = ?1) AS kind,
  (SELECT count(*) FROM (SELECT 1 FROM alert_rules LIMIT ?2)) AS rules`, watchID, MaxRules)
	if err != nil {
		return Rule{}, err
	}
	if len(facts) != 1 {
		return Rule{}, errors.New("alerts: rule facts read no row")
	}
	if facts[0].Rules >= MaxRules {
		return Rule{}, &ErrConflict{FieldError{Field: "type", Msg: fmt.Sprintf("at most %d rules", MaxRules)}}
	}
	if in.WatchID != nil {
		switch k := facts[0].Kind; {
		case k == nil:
			return Rule{}, fieldErr("watch_id", "no watch with id %d", watchID)
		case *k != RuleKinds[in.Type]:
			return Rule{}, fieldErr("watch_id", "%s applies to %s watches; watch %d is a %s watch", in.Type, RuleKinds[in.Type], watchID, *k)
		}
	}
	params, _ := json.Marshal(in.Params)
	secret := NewSecret()
	var watchArg any // a bound value: D1's driver takes no pointer
	if in.WatchID != nil {
		watchArg = watchID
	}
	var rows []ruleRow
	err = s.DB.Query(ctx, &rows, `INSERT INTO alert_rules (type, watch_id, params, channel, url, secret, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
RETURNING id, type, watch_id, params, channel, url, created_at, hour, hour_sent, hour_suppressed`,
		in.Type, watchArg, string(params), in.Channel, in.URL, secret, d1.Time(now))
	if err != nil {
		return Rule{}, err
	}
	if len(rows) != 1 {
		return Rule{}, errors.New("alerts: insert returned no rule")
	}
	r := rows[0].rule(hourOf(now))
	r.Secret = secret
	return r, nil
}

// Alert is a stored alert with its delivery.
type Alert struct {
	ID          int64           `json:"id"`
	RuleID      int64           `json:"rule_id"`
	WatchID     *int64          `json:"watch_id"`
	Type        string          `json:"type"`
	CreatedAt   string          `json:"created_at"`
	State       string          `json:"state"`
	Attempts    int             `json:"attempts"`
	Deliveries  json.RawMessage `json:"deliveries"`
	DeliveredAt *string         `json:"delivered_at"`
	Payload     json.RawMessage `json:"payload"`
}

// Alert pages.
const (
	DefaultAlertsPage = 50
	MaxAlertsPage     = 100
)

// alertsPageSQL is a page of alerts, newest first, below the id ?1: a
// range of the primary key.
const alertsPageSQL = `SELECT id, rule_id, watch_id, type, created_at, state, attempts, deliveries, delivered_at, payload
FROM alerts WHERE id < ?1 ORDER BY id DESC LIMIT ?2`

// Alerts is a page of alerts, newest first, before the id cursor (0: the
// newest), and the cursor of the next page (0: none).
func (s *Service) Alerts(ctx context.Context, cursor int64, limit int) ([]Alert, int64, error) {
	if cursor <= 0 {
		cursor = 1<<63 - 1
	}
	var rows []struct {
		Alert
		Deliveries string `json:"deliveries"`
		Payload    string `json:"payload"`
	}
	err := s.DB.Query(ctx, &rows, alertsPageSQL, cursor, limit)
	if err != nil {
		return nil, 0, err
	}
	out := make([]Alert, len(rows))
	for i, r := range rows {
		out[i] = r.Alert
		out[i].Deliveries, out[i].Payload = json.RawMessage(r.Deliveries), json.RawMessage(r.Payload)
	}
	next := int64(0)
	if len(out) == limit {
		next = out[len(out)-1].ID
	}
	return out, next, nil
}

// SettleLag is how far behind now an evaluation reads history: a row's
// time is its writer's clock when the statement was made, committed
// within moments, so a row is read once its time is this old and never
// missed by a cursor that passed it.
const SettleLag = time.Minute

// MaxHistoryRows bounds the rows of each history table one run reads.
// Above MaxWatches, so a page always moves the cursor: one statement
// writes at most one row an app at one time.
const MaxHistoryRows = 1000

// ResendAfter: a pending alert never attempted this long after it was
// made lost its queue message; a run sends it again (ResendBatch at most).
const (
	ResendAfter = 15 * time.Minute
	ResendBatch = 50
)

// Report is what one evaluation did.
type Report struct {
	Rules, Watches int
	// Changes are the candidate alerts before the storm bound.
	Changes    int
	Alerts     int
	Suppressed int
	Sent       int
	Resent     int
	// SegmentRulesWaiting are segment_heating rules not evaluated yet.
	SegmentRulesWaiting int
	// SendErr is the first queue send that failed (the alert stays
	// pending and a later run sends it again).
	SendErr string
}

// Summary is the report as one line.
func (r Report) Summary() string {
	s := fmt.Sprintf("%d rules, %d watches: %d changes, %d alerts (%d held back), %d sent, %d resent", r.Rules, r.Watches, r.Changes, r.Alerts, r.Suppressed, r.Sent, r.Resent)
	if r.SegmentRulesWaiting > 0 {
		s += fmt.Sprintf("; %d segment rules waiting for segment snapshots", r.SegmentRulesWaiting)
	}
	return s
}

// candidate is an alert a run would make, before the storm bound.
type candidate struct {
	rule  *Rule
	watch *Watch
	typ   string
	data  map[string]any
	dedup string
}

// Evaluate makes the alerts of the changes since the cursor and puts each
// on the queue. It reads the rules, then only what they need: the watches,
// the watched apps' history rows since the cursor (by primary key), a
// watched keyword's rankings only when the crawl searched it again, a
// watched app's reviews only when they were fetched again. Its writes are
// one atomic batch: the alerts, the rules' storm counts, the keyword
// watches' ranks, the cursor.
func (s *Service) Evaluate(ctx context.Context, now time.Time) (Report, error) {
	var rep Report
	var ruleRows []ruleRow
	if err := s.DB.Query(ctx, &ruleRows, rulesSQL, MaxRules); err != nil {
		return rep, err
	}
	rep.Rules = len(ruleRows)
	if len(ruleRows) == 0 {
		return rep, nil
	}
	hour := hourOf(now)
	rules := make([]Rule, len(ruleRows))
	byKind := map[string][]*Rule{}
	for i, r := range ruleRows {
		rules[i] = r.rule(hour)
		byKind[RuleKinds[r.Type]] = append(byKind[RuleKinds[r.Type]], &rules[i])
	}
	rep.SegmentRulesWaiting = len(byKind[KindSegment])
	watches, err := s.Watches(ctx)
	if err != nil {
		return rep, err
	}
	rep.Watches = len(watches)
	applies := func(r *Rule, w *Watch) bool {
		return RuleKinds[r.Type] == w.Kind && (r.WatchID == nil || *r.WatchID == w.ID)
	}
	var apps, keywords []*Watch
	for i := range watches {
		w := &watches[i]
		for _, r := range byKind[w.Kind] {
			if applies(r, w) {
				if w.Kind == KindApp {
					apps = append(apps, w)
				} else if w.Kind == KindKeyword {
					keywords = append(keywords, w)
				}
				break
			}
		}
	}

	var cands []candidate
	var stmts []d1.Stmt
	if len(apps) > 0 {
		var cursor []struct {
			To int64 `json:"evaluated_to"`
		}
		if err := s.DB.Query(ctx, &cursor, `SELECT evaluated_to FROM alert_cursor WHERE id = 1`); err != nil {
			return rep, err
		}
		from := int64(0)
		if len(cursor) == 1 {
			from = cursor[0].To
		}
		to := now.Add(-SettleLag).UnixMilli()
		if to > from {
			c, newTo, err := s.appChanges(ctx, apps, byKind[KindApp], applies, from, to, now)
			if err != nil {
				return rep, err
			}
			cands = append(cands, c...)
			stmts = append(stmts, d1.Stmt{SQL: `UPDATE alert_cursor SET evaluated_to = ?1, updated_at = ?2 WHERE id = 1`, Args: []any{newTo, d1.Time(now)}})
		}
	}
	if len(keywords) > 0 {
		c, stmt, err := s.keywordChanges(ctx, keywords, byKind[KindKeyword], applies)
		if err != nil {
			return rep, err
		}
		cands = append(cands, c...)
		if stmt != nil {
			stmts = append(stmts, *stmt)
		}
	}
	rep.Changes = len(cands)

	ids, write, err := s.makeAlerts(ctx, rules, cands, now, &rep)
	if err != nil {
		return rep, err
	}
	stmts = append(write, stmts...)
	if len(stmts) > 0 {
		if _, err := s.DB.ExecAtomic(ctx, stmts...); err != nil {
			return rep, err
		}
	}
	rep.Alerts = len(ids)
	rep.Sent = s.send(ctx, ids, &rep)
	resend, err := s.stalePending(ctx, now)
	if err != nil {
		return rep, err
	}
	rep.Resent = s.send(ctx, resend, &rep)
	return rep, nil
}

// historyRow is one history row of a watched app with the row before it.
type historyRow struct {
	TrackID  int64    `json:"track_id"`
	At       int64    `json:"at"`
	V        *string  `json:"v"`
	Prev     *string  `json:"prev"`
	N        *float64 `json:"n"`
	PrevN    *float64 `json:"prev_n"`
	Count    int64    `json:"count"`
	Currency string   `json:"currency"`
}

// The history reads: the rows of the watched apps (?1: [[track id, from
// ms]]) in (from, ?2], oldest first, at most ?3, each with the row before
// it (a seek of the primary key).
const (
	versionsSQL = `SELECT h.track_id AS track_id, h.seen_at AS at, h.version AS v,
  (SELECT p.version FROM app_version_history p WHERE p.track_id = h.track_id AND p.seen_at < h.seen_at ORDER BY p.seen_at DESC LIMIT 1) AS prev
FROM json_each(?1) w JOIN app_version_history h ON h.track_id = json_extract(w.value, '$[0]')
  AND h.seen_at > json_extract(w.value, '$[1]') AND h.seen_at <= ?2
ORDER BY h.seen_at LIMIT ?3`
	pricesSQL = `SELECT h.track_id AS track_id, h.seen_at AS at, h.price AS n, COALESCE(h.currency, '') AS currency,
  (SELECT p.price FROM app_price_history p WHERE p.track_id = h.track_id AND p.seen_at < h.seen_at ORDER BY p.seen_at DESC LIMIT 1) AS prev_n
FROM json_each(?1) w JOIN app_price_history h ON h.track_id = json_extract(w.value, '$[0]')
  AND h.seen_at > json_extract(w.value, '$[1]') AND h.seen_at <= ?2
ORDER BY h.seen_at LIMIT ?3`
	ratingsSQL = `SELECT h.track_id AS track_id, h.taken_at AS at, h.average_rating AS n, COALESCE(h.rating_count, 0) AS count,
  (SELECT p.average_rating FROM app_snapshots p WHERE p.track_id = h.track_id AND p.taken_at < h.taken_at AND p.average_rating IS NOT NULL ORDER BY p.taken_at DESC LIMIT 1) AS prev_n
FROM json_each(?1) w JOIN app_snapshots h ON h.track_id = json_extract(w.value, '$[0]')
  AND h.taken_at > json_extract(w.value, '$[1]') AND h.taken_at <= ?2
WHERE h.average_rating IS NOT NULL
ORDER BY h.taken_at LIMIT ?3`
	// surgeSQL counts a rule's watched apps' reviews (?1: [[track id,
	// from as d1.Layout]]) since ?2 of at most ?3 stars, for the apps whose
	// reviews were fetched since their from.
	surgeSQL = `SELECT json_extract(w.value, '$[0]') AS track_id, count(r.id) AS count
FROM json_each(?1) w JOIN app_reviews r ON r.app_id = json_extract(w.value, '$[0]') AND r.reviewed_at > ?2 AND r.rating <= ?3
WHERE EXISTS (SELECT 1 FROM review_fetches f WHERE f.app_id = json_extract(w.value, '$[0]') AND f.fetched_at > json_extract(w.value, '$[1]'))
GROUP BY 1`
)

// appChanges reads the watched apps' history in (from, to] and returns
// the candidates with the cursor's next value: to, or just before the
// last row's time of a table that filled its page (that time's rows are
// read again by the next run, so none are made twice).
func (s *Service) appChanges(ctx context.Context, apps []*Watch, rules []*Rule, applies func(*Rule, *Watch) bool, from, to int64, now time.Time) ([]candidate, int64, error) {
	pairs := make([][2]any, len(apps))
	textPairs := make([][2]any, len(apps))
	byApp := map[int64]*Watch{}
	for i, w := range apps {
		id, _ := strconv.ParseInt(w.Target, 10, 64)
		f := max(from, w.createdMs)
		pairs[i], textPairs[i] = [2]any{id, f}, [2]any{id, d1.Time(time.UnixMilli(f))}
		byApp[id] = w
	}
	pj, _ := json.Marshal(pairs)
	need := map[string]bool{}
	for _, r := range rules {
		need[r.Type] = true
	}
	newTo := to
	tables := []struct {
		typ, sql string
		rows     []historyRow
	}{{NewVersion, versionsSQL, nil}, {PriceChange, pricesSQL, nil}, {RatingDrop, ratingsSQL, nil}}
	for i := range tables {
		t := &tables[i]
		if !need[t.typ] {
			continue
		}
		if err := s.DB.Query(ctx, &t.rows, t.sql, string(pj), to, MaxHistoryRows); err != nil {
			return nil, 0, err
		}
		if len(t.rows) == MaxHistoryRows {
			newTo = min(newTo, t.rows[len(t.rows)-1].At-1)
		}
	}
	var out []candidate
	for _, t := range tables {
		for _, h := range t.rows {
			if h.At > newTo {
				continue
			}
			w := byApp[h.TrackID]
			c := Change{TrackID: h.TrackID, At: h.At, Count: h.Count, Currency: h.Currency}
			if h.V != nil {
				c.To = *h.V
			}
			if h.Prev != nil {
				c.From, c.HasFrom = *h.Prev, true
			}
			if h.N != nil {
				c.ToNum = *h.N
			}
			if h.PrevN != nil {
				c.FromNum, c.HasFrom = *h.PrevN, true
			}
			for _, r := range rules {
				if r.Type != t.typ || !applies(r, w) {
					continue
				}
				var data map[string]any
				switch {
				case t.typ == NewVersion && VersionChanged(c):
					data = map[string]any{"track_id": c.TrackID, "from": c.From, "to": c.To}
				case t.typ == PriceChange && PriceChanged(c):
					data = map[string]any{"track_id": c.TrackID, "from": c.FromNum, "to": c.ToNum, "currency": c.Currency}
				case t.typ == RatingDrop && RatingDropped(c, r.Drop):
					data = map[string]any{"track_id": c.TrackID, "from": c.FromNum, "to": c.ToNum, "rating_count": c.Count}
				}
				if data != nil {
					data["at"] = d1.Time(time.UnixMilli(c.At))
					out = append(out, candidate{rule: r, watch: w, typ: t.typ, data: data})
				}
			}
		}
	}
	tj, _ := json.Marshal(textPairs)
	for _, r := range rules {
		if r.Type != ReviewSurge {
			continue
		}
		var mine [][2]any
		for i, w := range apps {
			if applies(r, w) {
				mine = append(mine, textPairs[i])
			}
		}
		if len(mine) == 0 {
			continue
		}
		if len(mine) == len(apps) {
			mine = nil // all of them: the JSON made once
		}
		arg := string(tj)
		if mine != nil {
			b, _ := json.Marshal(mine)
			arg = string(b)
		}
		window := time.Duration(r.WindowHours) * time.Hour
		var counts []struct {
			TrackID int64 `json:"track_id"`
			Count   int   `json:"count"`
		}
		if err := s.DB.Query(ctx, &counts, surgeSQL, arg, d1.Time(now.Add(-window)), r.MaxStars); err != nil {
			return nil, 0, err
		}
		for _, c := range counts {
			if Surged(c.Count, r.Params) {
				// One alert a rule, app and window: a surge still in its
				// window when the reviews are fetched again is not new.
				bucket := now.UnixMilli() / window.Milliseconds()
				out = append(out, candidate{rule: r, watch: byApp[c.TrackID], typ: ReviewSurge,
					data:  map[string]any{"track_id": c.TrackID, "reviews": c.Count, "window_hours": r.WindowHours, "max_stars": r.MaxStars},
					dedup: fmt.Sprintf("surge:%d:%d:%d", r.ID, c.TrackID, bucket)})
			}
		}
	}
	return out, newTo, nil
}

// The keyword reads: the watched keywords (?1: [[watch id, keyword, its
// searched_at]]) the crawl searched since, one seek of crawl_keywords'
// unique index each; then those keywords' rankings (?1: keywords) down to
// ?2, a range of crawl_rankings' primary key each.
const (
	searchedSQL = `SELECT json_extract(w.value, '$[0]') AS watch_id, k.searched_at AS searched_at
FROM json_each(?1) w JOIN crawl_keywords k ON k.keyword = json_extract(w.value, '$[1]')
WHERE k.searched_at > COALESCE(json_extract(w.value, '$[2]'), '')`
	rankingsSQL = `SELECT keyword, track_id, rank FROM crawl_rankings WHERE keyword IN (SELECT value FROM json_each(?1)) AND rank <= ?2 ORDER BY keyword, rank`
)

// HotQueries are the evaluation's reads of the crawl's tables, with
// sample arguments, for the plan test.
func HotQueries() []d1.NamedQuery {
	apps := `[[100000001, 0], [100000002, 1767225600000]]`
	return []d1.NamedQuery{
		{Name: "alerts versions", SQL: versionsSQL, Args: []any{apps, int64(1767312000000), MaxHistoryRows}},
		{Name: "alerts prices", SQL: pricesSQL, Args: []any{apps, int64(1767312000000), MaxHistoryRows}},
		{Name: "alerts ratings", SQL: ratingsSQL, Args: []any{apps, int64(1767312000000), MaxHistoryRows}},
		{Name: "alerts review surge", SQL: surgeSQL, Args: []any{`[[100000001, "2026-01-01T00:00:00.000Z"]]`, "2025-12-31T00:00:00.000Z", 5}},
		{Name: "alerts keywords searched", SQL: searchedSQL, Args: []any{`[[1, "budget", null], [2, "chess", "2026-01-01T00:00:00.000Z"]]`}},
		{Name: "alerts keyword rankings", SQL: rankingsSQL, Args: []any{`["budget", "chess"]`, TrackedRanks}},
		{Name: "alerts page", SQL: alertsPageSQL, Args: []any{int64(1<<63 - 1), DefaultAlertsPage}, Page: true},
	}
}

// keywordChanges compares the watched keywords the crawl searched since
// their watch's last evaluation with the ranks it kept: the first search
// a watch sees is its baseline (no alert). It returns the candidates and
// the statement keeping the new ranks.
func (s *Service) keywordChanges(ctx context.Context, kws []*Watch, rules []*Rule, applies func(*Rule, *Watch) bool) ([]candidate, *d1.Stmt, error) {
	args := make([][3]any, len(kws))
	for i, w := range kws {
		args[i] = [3]any{w.ID, w.Target, w.SearchedAt}
	}
	aj, _ := json.Marshal(args)
	var searched []struct {
		WatchID    int64  `json:"watch_id"`
		SearchedAt string `json:"searched_at"`
	}
	err := s.DB.Query(ctx, &searched, searchedSQL, string(aj))
	if err != nil || len(searched) == 0 {
		return nil, nil, err
	}
	byID := map[int64]*Watch{}
	for _, w := range kws {
		byID[w.ID] = w
	}
	names := make([]string, len(searched))
	for i, sr := range searched {
		names[i] = byID[sr.WatchID].Target
	}
	nj, _ := json.Marshal(names)
	var ranks []struct {
		Keyword string `json:"keyword"`
		TrackID int64  `json:"track_id"`
		Rank    int    `json:"rank"`
	}
	err = s.DB.Query(ctx, &ranks, rankingsSQL, string(nj), TrackedRanks)
	if err != nil {
		return nil, nil, err
	}
	cur := map[string][]Rank{}
	for _, r := range ranks {
		cur[r.Keyword] = append(cur[r.Keyword], Rank{TrackID: r.TrackID, Rank: r.Rank})
	}
	var out []candidate
	updates := make([][3]any, 0, len(searched))
	for _, sr := range searched {
		w := byID[sr.WatchID]
		now := cur[w.Target]
		if w.SearchedAt != nil {
			prev := decodeRanks(w.ranks)
			for _, r := range rules {
				if !applies(r, w) {
					continue
				}
				switch r.Type {
				case RankChange:
					for _, m := range RankMoves(prev, now, r.Places) {
						out = append(out, candidate{rule: r, watch: w, typ: RankChange,
							data: map[string]any{"keyword": w.Target, "track_id": m.TrackID, "from": m.From, "to": m.To, "places": abs(m.From - m.To), "searched_at": sr.SearchedAt}})
					}
				case NewCompetitor:
					for _, e := range Entrants(prev, now) {
						out = append(out, candidate{rule: r, watch: w, typ: NewCompetitor,
							data: map[string]any{"keyword": w.Target, "track_id": e.TrackID, "rank": e.Rank, "searched_at": sr.SearchedAt}})
					}
				}
			}
		}
		updates = append(updates, [3]any{w.ID, sr.SearchedAt, encodeRanks(now)})
	}
	uj, _ := json.Marshal(updates)
	return out, &d1.Stmt{SQL: `UPDATE alert_watches SET searched_at = json_extract(u.value, '$[1]'), ranks = json_extract(u.value, '$[2]')
FROM json_each(?1) u WHERE alert_watches.id = json_extract(u.value, '$[0]')`, Args: []any{string(uj)}}, nil
}

// encodeRanks keeps ranks as [[track id, rank], ...].
func encodeRanks(rs []Rank) string {
	pairs := make([][2]int64, len(rs))
	for i, r := range rs {
		pairs[i] = [2]int64{r.TrackID, int64(r.Rank)}
	}
	b, _ := json.Marshal(pairs)
	return string(b)
}

func decodeRanks(s string) []Rank {
	var pairs [][2]int64
	json.Unmarshal([]byte(s), &pairs)
	out := make([]Rank, len(pairs))
	for i, p := range pairs {
		out[i] = Rank{TrackID: p[0], Rank: int(p[1])}
	}
	return out
}

// alertRow is one alert as the insert reads it.
type alertRow struct {
	ID      int64  `json:"id"`
	RuleID  int64  `json:"rule_id"`
	WatchID *int64 `json:"watch_id"`
	Type    string `json:"type"`
	Payload string `json:"payload"`
	Dedup   string `json:"dedup,omitempty"`
}

// makeAlerts bounds the candidates per rule (Bound), names their apps
// (one read), and returns the new alerts' ids with the statements that
// insert them and keep the rules' storm counts.
func (s *Service) makeAlerts(ctx context.Context, rules []Rule, cands []candidate, now time.Time, rep *Report) ([]int64, []d1.Stmt, error) {
	if len(cands) == 0 {
		return nil, nil, nil
	}
	// Candidates made already (a surge in its window): dropped first.
	var keys []string
	for _, c := range cands {
		if c.dedup != "" {
			keys = append(keys, c.dedup)
		}
	}
	if len(keys) > 0 {
		kj, _ := json.Marshal(keys)
		var made []struct {
			Dedup string `json:"dedup"`
		}
		if err := s.DB.Query(ctx, &made, `SELECT dedup FROM alerts WHERE dedup IN (SELECT value FROM json_each(?1))`, string(kj)); err != nil {
			return nil, nil, err
		}
		done := map[string]bool{}
		for _, m := range made {
			done[m.Dedup] = true
		}
		kept := cands[:0]
		for _, c := range cands {
			if c.dedup == "" || !done[c.dedup] {
				kept = append(kept, c)
			}
		}
		cands = kept
		if len(cands) == 0 {
			return nil, nil, nil
		}
	}
	byRule := map[int64][]candidate{}
	for _, c := range cands {
		byRule[c.rule.ID] = append(byRule[c.rule.ID], c)
	}
	hour := hourOf(now)
	var made []candidate
	var counts [][4]int64
	for i := range rules {
		r := &rules[i]
		cs := byRule[r.ID]
		if len(cs) == 0 {
			continue
		}
		keep, summary, next := Bound(r.count, hour, len(cs))
		made = append(made, cs[:keep]...)
		if summary {
			made = append(made, candidate{rule: r, typ: Summary, data: map[string]any{"rule_id": r.ID, "suppressed": len(cs) - keep, "hour": d1.Time(time.Unix(hour*3600, 0))}})
		}
		rep.Suppressed += len(cs) - keep
		counts = append(counts, [4]int64{r.ID, next.Hour, int64(next.Sent), int64(next.Suppressed)})
	}
	// The apps' names, for the texts.
	var appIDs []int64
	for _, c := range made {
		if id, ok := c.data["track_id"].(int64); ok {
			appIDs = append(appIDs, id)
		}
	}
	names := map[int64]string{}
	if len(appIDs) > 0 {
		ij, _ := json.Marshal(appIDs)
		var rows []struct {
			TrackID int64  `json:"track_id"`
			Name    string `json:"name"`
		}
		if err := s.DB.Query(ctx, &rows, `SELECT track_id, COALESCE(name, '') AS name FROM app_registry WHERE track_id IN (SELECT value FROM json_each(?1))`, string(ij)); err != nil {
			return nil, nil, err
		}
		for _, r := range rows {
			names[r.TrackID] = r.Name
		}
	}
	// Ids follow the largest (the rowid's maximum: one row read); the
	// scheduler runs one evaluation at a time, and a clash fails the
	// batch, which the next run makes again.
	var top []struct {
		ID int64 `json:"id"`
	}
	if err := s.DB.Query(ctx, &top, `SELECT COALESCE(max(id), 0) AS id FROM alerts`); err != nil {
		return nil, nil, err
	}
	next := int64(0)
	if len(top) == 1 {
		next = top[0].ID
	}
	rows := make([]alertRow, len(made))
	ids := make([]int64, len(made))
	created := d1.Time(now)
	for i, c := range made {
		next++
		p := Payload{ID: next, RuleID: c.rule.ID, Type: c.typ, CreatedAt: created, Data: c.data}
		if c.watch != nil {
			p.Watch = &WatchRef{ID: c.watch.ID, Kind: c.watch.Kind, Target: c.watch.Target}
		}
		if id, ok := c.data["track_id"].(int64); ok && names[id] != "" {
			c.data["name"] = names[id]
		}
		p.Text = Text(c.typ, c.data, names)
		b, _ := json.Marshal(p)
		rows[i] = alertRow{ID: next, RuleID: c.rule.ID, Type: c.typ, Payload: string(b), Dedup: c.dedup}
		if p.Watch != nil {
			rows[i].WatchID = &p.Watch.ID
		}
		ids[i] = next
	}
	rj, _ := json.Marshal(rows)
	cj, _ := json.Marshal(counts)
	return ids, []d1.Stmt{
		{SQL: `INSERT INTO alerts (id, rule_id, watch_id, type, payload, created_at, dedup)
SELECT json_extract(value, '$.id'), json_extract(value, '$.rule_id'), json_extract(value, '$.watch_id'), json_extract(value, '$.type'),
  json_extract(value, '$.payload'), ?2, json_extract(value, '$.dedup') FROM json_each(?1)`, Args: []any{string(rj), created}},
		{SQL: `UPDATE alert_rules SET hour = json_extract(c.value, '$[1]'), hour_sent = json_extract(c.value, '$[2]'), hour_suppressed = json_extract(c.value, '$[3]')
FROM json_each(?1) c WHERE alert_rules.id = json_extract(c.value, '$[0]')`, Args: []any{string(cj)}},
	}, nil
}

// stalePending is the pending alerts never attempted ResendAfter after
// they were made: their queue message was lost.
func (s *Service) stalePending(ctx context.Context, now time.Time) ([]int64, error) {
	var rows []struct {
		ID int64 `json:"id"`
	}
	err := s.DB.Query(ctx, &rows, `SELECT id FROM alerts WHERE state = 'pending' AND created_at < ?1 AND attempts = 0 ORDER BY created_at LIMIT ?2`,
		d1.Time(now.Add(-ResendAfter)), ResendBatch)
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids, err
}

// send puts a delivery message of each alert on the queue, stopping at
// the first failure (the rest stay pending: a later run sends them).
func (s *Service) send(ctx context.Context, ids []int64, rep *Report) int {
	for i, id := range ids {
		if err := s.Events.Send(ctx, DeliveryMessage(id)); err != nil {
			if rep.SendErr == "" {
				rep.SendErr = err.Error()
			}
			return i
		}
	}
	return len(ids)
}
