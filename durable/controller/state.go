// Package enrichment decides for the EnrichmentController Durable Object
// (worker/enrichment performs what it decides): a self-scheduling loop that picks work, calls a rate-limited
// upstream in bounded parallel chunks, measures its rolling success rate,
// and lets a pacing algorithm (durable/pacing) decide how much to send and
// when: the learned-capacity "probe" controller by default, the design's
// tiered "seed" rules by configuration.
//
// Everything here is plain Go with the clock passed in: state in, state out.
// The JavaScript shim only loads and stores the state (one JSON value, so
// writes are atomic), sets alarms, and runs the I/O plan this package returns.
package controller

import (
	"encoding/json"
	"fmt"
	"storecrawl/durable/ledger"
	"time"

	"storecrawl/durable/pacing"
	"storecrawl/internal/objects"
)

// Controller settings.
const (
	// CooldownDuration is the seed rules' pause after the critical zone.
	CooldownDuration = 5 * time.Minute
	// MinCooldown and MaxCooldown bound a configured cooldown (Config).
	MinCooldown = time.Second
	MaxCooldown = time.Hour
	// DefaultPacing names the pacing algorithm the product runs.
	DefaultPacing = "probe"
	// maxFactError bounds an error text kept in a ledger fact.
	maxFactError = 300
)

// Config holds deploy-time settings (Worker vars), validated by NewConfig.
type Config struct {
	// Target names the crawl target (the object's name); "" = objects.DefaultTarget.
	Target string
	// Pacing names the algorithm (durable/pacing): "probe" or "seed".
	Pacing string
	// Cooldown is how long the seed rules' critical zone suspends work
	// (ENRICHMENT_COOLDOWN_S); no other algorithm reads it.
	Cooldown time.Duration
	// ParserProbe spaces the probe pages while store pages are paused for
	// parser drift; 0 means ParserProbeInterval.
	ParserProbe time.Duration
	// LookupBatch is how many items share one lookup request (LOOKUP_BATCH);
	// 0 means DefaultLookupBatch.
	LookupBatch int
	// LookupFresh is how old stored lookup fields (from a lookup or a
	// search) may be for an item to skip its lookup (LOOKUP_FRESH_H); 0
	// means DefaultLookupFresh, negative: always look up.
	LookupFresh time.Duration
	// Subrequests is the invocation's budget of subrequests
	// (SUBREQUEST_BUDGET); 0 means DefaultSubrequests.
	Subrequests int
	// Idle is the pause after a tick that found no work (ENRICHMENT_IDLE_S);
	// 0 means IdleInterval. Only tests that wait for an idle controller to
	// see new work shorten it: each poll costs a D1 read.
	Idle time.Duration
}

// SubrequestBudget is the configured budget or its default.
func (c Config) SubrequestBudget() int {
	if c.Subrequests <= 0 {
		return DefaultSubrequests
	}
	return c.Subrequests
}

// SetSubrequestBudget sets Subrequests within [FreeSubrequests, DefaultSubrequests].
func (c *Config) SetSubrequestBudget(n int) error {
	if n < FreeSubrequests || n > DefaultSubrequests {
		return fmt.Errorf("subrequest budget %d outside [%d, %d]", n, FreeSubrequests, DefaultSubrequests)
	}
	c.Subrequests = n
	return nil
}

// IdleWait is the configured Idle or IdleInterval.
func (c Config) IdleWait() time.Duration {
	if c.Idle <= 0 {
		return IdleInterval
	}
	return c.Idle
}

// MinIdle bounds ENRICHMENT_IDLE_S from below: a poll a second.
const MinIdle = time.Second

// SetIdleSeconds sets Idle from seconds, within [MinIdle, IdleInterval].
func (c *Config) SetIdleSeconds(seconds int) error {
	d := time.Duration(seconds) * time.Second
	if d < MinIdle || d > IdleInterval {
		return fmt.Errorf("idle poll %ds outside [%s, %s]", seconds, MinIdle, IdleInterval)
	}
	c.Idle = d
	return nil
}

// Lookup freshness (LOOKUP_FRESH_H): a search result carries the same
// fields as a lookup, so an app found by a recent search needs only its page.
const (
	// DefaultLookupFresh: a day-old rating count or price is as good as
	// the enrichment's own snapshot, and searches run every few minutes.
	DefaultLookupFresh = 24 * time.Hour
	// MaxLookupFresh bounds the setting: older fields are re-looked-up.
	MaxLookupFresh = 30 * 24 * time.Hour
)

// LookupFreshness is the configured LookupFresh or its default; 0 when
// every item is looked up.
func (c Config) LookupFreshness() time.Duration {
	switch {
	case c.LookupFresh < 0:
		return 0
	case c.LookupFresh == 0:
		return DefaultLookupFresh
	}
	return c.LookupFresh
}

// SetLookupFreshHours sets LookupFresh from hours within [0, MaxLookupFresh];
// 0 turns the skip off (every item is looked up).
func (c *Config) SetLookupFreshHours(h int) error {
	d := time.Duration(h) * time.Hour
	if h < 0 || d > MaxLookupFresh {
		return fmt.Errorf("lookup freshness %dh outside [0, %s]", h, MaxLookupFresh)
	}
	c.LookupFresh = d
	if h == 0 {
		c.LookupFresh = -1
	}
	return nil
}

// LookupBatchSize is the configured LookupBatch or its default.
func (c Config) LookupBatchSize() int {
	if c.LookupBatch <= 0 {
		return DefaultLookupBatch
	}
	return c.LookupBatch
}

// SetLookupBatch sets LookupBatch, within [MinLookupBatch, MaxLookupBatch].
func (c *Config) SetLookupBatch(n int) error {
	if n < MinLookupBatch || n > MaxLookupBatch {
		return fmt.Errorf("lookup batch %d outside [%d, %d]", n, MinLookupBatch, MaxLookupBatch)
	}
	c.LookupBatch = n
	return nil
}

// ProbeInterval is the configured ParserProbe or its default.
func (c Config) ProbeInterval() time.Duration {
	if c.ParserProbe <= 0 {
		return ParserProbeInterval
	}
	return c.ParserProbe
}

// SetParserProbe sets ParserProbe from seconds, within [MinCooldown, MaxCooldown].
func (c *Config) SetParserProbe(seconds int) error {
	d := time.Duration(seconds) * time.Second
	if d < MinCooldown || d > MaxCooldown {
		return fmt.Errorf("parser probe interval %s outside [%s, %s]", d, MinCooldown, MaxCooldown)
	}
	c.ParserProbe = d
	return nil
}

// DefaultConfig is the product's configuration.
func DefaultConfig() Config { return Config{Pacing: DefaultPacing, Cooldown: CooldownDuration} }

// NewConfig builds a Config from the vars; empty/zero means the default.
func NewConfig(pacingName string, cooldownSeconds int) (Config, error) {
	cfg := DefaultConfig()
	if pacingName != "" {
		if _, err := pacing.New(pacingName, pacing.Config{SubrequestsPerItem: SubrequestsPerItem}); err != nil {
			return cfg, err
		}
		cfg.Pacing = pacingName
	}
	if cooldownSeconds != 0 {
		d := time.Duration(cooldownSeconds) * time.Second
		if d < MinCooldown || d > MaxCooldown {
			return cfg, fmt.Errorf("cooldown %s outside [%s, %s]", d, MinCooldown, MaxCooldown)
		}
		cfg.Cooldown = d
	}
	return cfg, nil
}

// Source is this controller's name in the ledger.
func (c Config) Source() string {
	if c.Target == "" {
		return objects.SourceControllerPrefix + objects.DefaultTarget
	}
	return objects.SourceControllerPrefix + c.Target
}

// Counters are the totals as ledger counters.
func (t Totals) Counters() map[string]int64 {
	out := map[string]int64{}
	for k, p := range t.counterRefs() {
		out[k] = *p
	}
	return out
}

// counterRefs names the fields Counters reports (a ledger repair sets them).
func (t *Totals) counterRefs() map[string]*int64 {
	return map[string]*int64{
		"dispatched": &t.Dispatched, "completed": &t.Completed, "failed": &t.Failed,
		"rate_limited": &t.RateLimited, "item_errors": &t.ItemErrors, "gave_up": &t.GaveUp,
		"ticks": &t.Ticks, "cooldowns": &t.Cooldowns,
		"lookup_requests": &t.LookupRequests, "page_requests": &t.PageRequests,
		"lookup_refusals": &t.LookupRefusals, "page_refusals": &t.PageRefusals,
		"lookups_skipped": &t.LookupsSkipped, "pages_from_r2": &t.PagesFromR2,
	}
}

func (c Config) pacingConfig() pacing.Config {
	return pacing.Config{SubrequestsPerItem: SubrequestsPerItem, Cooldown: c.Cooldown}
}

// Rolling metrics: minute buckets, so the window is the same size whatever the interval.
const (
	MetricsWindowMinutes = 5
	// metricsKeepMinutes keeps one bucket beyond the window so a window that
	// starts mid-minute still sees its first partial minute.
	metricsKeepMinutes = MetricsWindowMinutes + 1
)

// StateVersion is bumped when the stored shape changes incompatibly.
const StateVersion = 1

// Bucket aggregates one minute of outcomes. Minute is the unix-ms start of the minute.
type Bucket struct {
	Minute     int64 `json:"minute"`
	Dispatched int   `json:"dispatched"`
	// Completed items were enriched and stored.
	Completed int `json:"completed"`
	// Failed counts upstream-level failures (rate_limit, server_error,
	// timeout): the only ones that lower the success rate.
	Failed int `json:"failed"`
	// RateLimited is the part of Failed that were 403/429 answers.
	RateLimited int `json:"rate_limited"`
	// ItemErrors are item-level problems (not_found, parse_error, store_error):
	// the upstream answered, so they count as served, not as failures.
	ItemErrors int `json:"item_errors"`
}

// Totals are lifetime counters.
type Totals struct {
	Dispatched  int64 `json:"dispatched"`
	Completed   int64 `json:"completed"`
	Failed      int64 `json:"failed"`
	RateLimited int64 `json:"rate_limited"`
	ItemErrors  int64 `json:"item_errors"`
	// GaveUp counts items marked permanently failed (never retried again).
	GaveUp int64 `json:"gave_up"`
	// Deferred counts items an upstream-level failure (5xx, timeout,
	// connection error) left queued with a backoff, their attempts uncounted.
	Deferred int64 `json:"deferred"`
	// HoldsCapped counts answers whose Retry-After or RateLimit-Reset asked
	// for a longer hold than UPSTREAM_MAX_HOLD_S and were held to it.
	HoldsCapped int64 `json:"holds_capped"`
	// LookupRequests and PageRequests count what reached the upstream, by
	// kind: a lookup batch is one request however many apps it holds.
	LookupRequests int64 `json:"lookup_requests"`
	PageRequests   int64 `json:"page_requests"`
	// LookupRefusals and PageRefusals count the 403/429 answers among them,
	// by host: the API host's lookups, the store host's pages.
	LookupRefusals int64 `json:"lookup_refusals"`
	PageRefusals   int64 `json:"page_refusals"`
	// LookupsSkipped counts items enriched from their fresh stored lookup
	// (LOOKUP_FRESH_H), with no lookup sent for them.
	LookupsSkipped int64 `json:"lookups_skipped"`
	// Refreshed counts enriched apps looked at again because their refresh
	// came due, stored with a new record or, when their lookup
	// showed nothing a page is needed for, RefreshesUnchanged (one share
	// of a lookup, no page). Neither counts in Completed.
	Refreshed          int64 `json:"refreshed"`
	RefreshesUnchanged int64 `json:"refreshes_unchanged"`
	// RefreshPagesDeferred counts changed refreshes whose page waited for
	// the new apps (ItemResult.PageDeferred): their lookup recorded, their
	// page still due.
	RefreshPagesDeferred int64 `json:"refresh_pages_deferred"`
	Ticks                int64 `json:"ticks"`
	// Cooldowns counts entries into the critical zone.
	Cooldowns int64 `json:"cooldowns"`
	// D1RowsRead/D1RowsWritten: the runs' D1 cost (rows per completed app
	// is the enrichment path's cost per enriched app).
	D1RowsRead    int64 `json:"d1_rows_read"`
	D1RowsWritten int64 `json:"d1_rows_written"`
	// PagePuts counts the runs' R2 puts of raw pages (RunOutcome.PagePuts).
	PagePuts int64 `json:"page_puts"`
	// LimiterCalls counts the runs' limiter calls (RunOutcome.LimiterCalls).
	LimiterCalls int64 `json:"limiter_calls"`
	// PagesFromR2 counts retries enriched from their stored page
	// (RunOutcome.PagesFromR2): no page request sent, none counted in
	// PageRequests.
	PagesFromR2 int64 `json:"pages_from_r2"`
	// SimilarDiscovered counts the unknown apps the stored pages' similar
	// shelves queued (ItemResult.Discovered): new apps for no request.
	SimilarDiscovered int64 `json:"similar_discovered"`
}

// State is the whole controller state, persisted as one JSON value.
type State struct {
	Version    int      `json:"version"`
	Running    bool     `json:"running"`
	LastTickAt int64    `json:"last_tick_at"` // unix ms of the last completed work tick
	Totals     Totals   `json:"totals"`
	Metrics    []Bucket `json:"metrics"` // ascending by Minute, pruned on every save
	// Pacing is the algorithm's name and PacingState its own state: the
	// algorithm decides how much to send and when (durable/pacing).
	Pacing      string          `json:"pacing"`
	PacingState json.RawMessage `json:"pacing_state,omitempty"`
	// LookupPacingState is the same algorithm's state for the API host
	// (lookups), apart from PacingState, which paces the store host
	// (pages): the two hosts have separate limits upstream, so a refusal
	// on one never slows the other.
	LookupPacingState json.RawMessage `json:"lookup_pacing_state,omitempty"`
	// LastPlan is the most recent work plan, for operators.
	LastPlan *PlanSummary `json:"last_plan,omitempty"`
	// LastTick summarises the most recent tick for operators.
	LastTick *TickSummary `json:"last_tick,omitempty"`
	// RunStartedAt marks a work run in flight (unix ms); 0 when idle. A run
	// that never reports back is abandoned after runTimeout.
	RunStartedAt int64 `json:"run_started_at,omitempty"`
	// LedgerSince is when this controller's ledger began (unix ms); its
	// first fact is a baseline of the counters then.
	LedgerSince int64 `json:"ledger_since,omitempty"`
	// OpenMinute is the ticks' fact of the minute in progress: the ticks'
	// counter deltas summed, the latest tick's data (closeMinute). It is
	// appended to the ledger when a tick of a later minute ends, or on
	// stop or reset; until then the ledger's report leaves its counters
	// out (ledgerCounters).
	OpenMinute *ledger.Fact `json:"open_minute,omitempty"`
	// Parser watches whether store pages still parse (parser drift).
	Parser ParserHealth `json:"parser"`
	// LastHoldCapped is the latest hold hint the cap cut short, for operators.
	LastHoldCapped *HoldCapped `json:"last_hold_capped,omitempty"`
	// EventOutbox holds enriched apps whose app-enriched events a run
	// could not send (the queue failed, or the invocation's subrequest
	// budget ran out), oldest first; OutboxHanded is how many of its first
	// ones the run in flight was given to send. They leave the outbox only
	// when a run reports them sent, so a run that dies loses none.
	EventOutbox  []int64 `json:"event_outbox,omitempty"`
	OutboxHanded int     `json:"outbox_handed,omitempty"`
	// OutboxSince is when the outbox's oldest app entered it (unix ms; 0:
	// empty, or kept before it was recorded).
	OutboxSince int64 `json:"outbox_since,omitempty"`
}

// Event outbox bounds.
const (
	// OutboxPerRun is how many outbox apps one run is given to send: ten
	// messages of events.MaxTrackIDs, a few subrequests beside its items.
	OutboxPerRun = 500
	// MaxEventOutbox bounds the outbox kept in the controller's state
	// (about 10 bytes an id, so ~100 KB under the 128 KiB a Durable Object
	// storage value may hold). Past it the oldest are dropped with an
	// error event: the queue has been failing for hours, and the markets
	// sweep must rescore (an operator's call).
	MaxEventOutbox = 10000
	// AnnounceWithin: a run sends its enriched apps in full messages
	// (events.MaxTrackIDs) and leaves the rest in the outbox until its
	// oldest app is this old, so a tick of a few apps sends no message of
	// its own: the markets score an app at most this much later.
	AnnounceWithin = time.Minute
)

// holdPartial is whether the run at now may leave a partial message's
// apps in the outbox: the outbox's oldest is younger than AnnounceWithin
// (an outbox kept before OutboxSince was recorded is sent whole).
func (s State) holdPartial(now time.Time) bool {
	if len(s.EventOutbox) == 0 {
		return true
	}
	return s.OutboxSince > 0 && now.Sub(time.UnixMilli(s.OutboxSince)) < AnnounceWithin
}

// settleOutbox drops the apps the finished run was handed (sent, or
// back among its unsent) and keeps the unsent ones (held or not sent),
// which entered at the latest when the run started (runStart); it returns
// how many the bound dropped.
func (s *State) settleOutbox(unsent []int64, runStart time.Time) (dropped int) {
	handed := min(s.OutboxHanded, len(s.EventOutbox))
	if len(s.EventOutbox) == 0 || s.OutboxSince == 0 {
		// The oldest left is the run's own. Otherwise the time kept is
		// the oldest's before the run, at most as old as the oldest now.
		s.OutboxSince = runStart.UnixMilli()
	}
	s.EventOutbox = append(append([]int64(nil), s.EventOutbox[handed:]...), unsent...)
	s.OutboxHanded = 0
	if n := len(s.EventOutbox) - MaxEventOutbox; n > 0 {
		s.EventOutbox, dropped = append([]int64(nil), s.EventOutbox[n:]...), n
	}
	if len(s.EventOutbox) == 0 {
		s.EventOutbox, s.OutboxSince = nil, 0
	}
	return dropped
}

// HoldCapped is an upstream hold hint longer than the cap: when it came
// (unix ms), what it asked for and what was held.
type HoldCapped struct {
	At     int64 `json:"at"`
	AskedS int64 `json:"asked_s"`
	HeldS  int64 `json:"held_s"`
}

// TickSummary is what the last work tick did.
type TickSummary struct {
	At         int64          `json:"at"`
	Picked     int            `json:"picked"`
	Requests   int            `json:"requests"`
	ByClass    map[string]int `json:"by_class"`
	DurationMs int64          `json:"duration_ms"`
	NextInMs   int64          `json:"next_in_ms"`
	Error      string         `json:"error,omitempty"`
	// Subrequests is every platform call the run made (of RunBudget's calls).
	Subrequests int `json:"subrequests"`
}

// PlanSummary is a work plan as operators see it.
type PlanSummary struct {
	At           int64 `json:"at"`
	Items        int   `json:"items"`
	ChunkItems   int   `json:"chunk_items"`
	ChunkPauseMs int64 `json:"chunk_pause_ms"`
	// NoLookups: the API host held, so only items with a fresh stored
	// lookup ran (their pages).
	NoLookups bool `json:"no_lookups,omitempty"`
}

// DefaultState is where a new or reset controller starts: running, conservative.
func DefaultState() State {
	return State{Version: StateVersion, Running: true}
}

// LoadState decodes stored state, falling back to defaults for a missing or
// corrupt value (reported through corrupt so it can be logged), fills fields
// that older versions lacked, clamps everything into the current bounds and
// prunes expired metrics.
func LoadState(raw string, now time.Time) (s State, corrupt bool) {
	s = DefaultState()
	if raw != "" {
		var loaded State
		if err := json.Unmarshal([]byte(raw), &loaded); err != nil {
			corrupt = true
		} else {
			if loaded.Version == 0 {
				loaded.Version = StateVersion
			}
			s = loaded
		}
	}
	s.clamp(now)
	s.prune(now)
	return s, corrupt
}

// Encode serialises the state after pruning expired metrics, so the stored
// value stays bounded (at most metricsKeepMinutes buckets).
func (s State) Encode(now time.Time) string {
	s.prune(now)
	b, err := json.Marshal(s)
	if err != nil {
		// State holds only plain values; Marshal cannot fail on it.
		panic("enrichment: encode state: " + err.Error())
	}
	return string(b)
}

func (s *State) clamp(now time.Time) {
	kept := s.Metrics[:0]
	for _, b := range s.Metrics {
		if b.Minute <= 0 || b.Dispatched < 0 || b.Completed < 0 || b.Failed < 0 || b.RateLimited < 0 || b.ItemErrors < 0 {
			continue
		}
		kept = append(kept, b)
	}
	s.Metrics = kept
}

// prune drops buckets older than the window plus one minute.
func (s *State) prune(now time.Time) {
	cutoff := now.Add(-metricsKeepMinutes * time.Minute).UnixMilli()
	kept := s.Metrics[:0]
	for _, b := range s.Metrics {
		if b.Minute >= cutoff {
			kept = append(kept, b)
		}
	}
	if len(kept) == 0 {
		kept = nil
	}
	s.Metrics = kept
}

func minuteOf(now time.Time) int64 {
	ms := now.UnixMilli()
	return ms - ms%int64(time.Minute/time.Millisecond)
}

// bucket returns the bucket for now's minute, creating it in order.
func (s *State) bucket(now time.Time) *Bucket {
	m := minuteOf(now)
	for i := range s.Metrics {
		if s.Metrics[i].Minute == m {
			return &s.Metrics[i]
		}
	}
	s.Metrics = append(s.Metrics, Bucket{Minute: m})
	// Keep ascending order even if the clock stepped back.
	for i := len(s.Metrics) - 1; i > 0 && s.Metrics[i].Minute < s.Metrics[i-1].Minute; i-- {
		s.Metrics[i], s.Metrics[i-1] = s.Metrics[i-1], s.Metrics[i]
	}
	for i := range s.Metrics {
		if s.Metrics[i].Minute == m {
			return &s.Metrics[i]
		}
	}
	panic("unreachable")
}

// Window sums the buckets inside the rolling window ending at now.
func (s State) Window(now time.Time) Bucket {
	start := now.Add(-MetricsWindowMinutes * time.Minute).UnixMilli()
	var sum Bucket
	for _, b := range s.Metrics {
		if b.Minute >= start {
			sum.Dispatched += b.Dispatched
			sum.Completed += b.Completed
			sum.Failed += b.Failed
			sum.RateLimited += b.RateLimited
			sum.ItemErrors += b.ItemErrors
		}
	}
	return sum
}

// SuccessRate is the share of upstream exchanges in the window that the
// upstream served (item-level errors count as served), and the sample size.
// With no samples it is optimistic (1.0): a fresh start keeps its parameters
// until real failures say otherwise.
func (s State) SuccessRate(now time.Time) (rate float64, samples int) {
	w := s.Window(now)
	served := w.Completed + w.ItemErrors
	samples = served + w.Failed
	if samples == 0 {
		return 1, 0
	}
	return float64(served) / float64(samples), samples
}
