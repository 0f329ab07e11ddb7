package controller

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"storecrawl/durable/ledger"
	"storecrawl/durable/object"
	"storecrawl/durable/pacing"
)

// Loop timing.
const (
	// StartDelay is how soon the first tick runs after a start, reset or the
	// first use of a fresh controller.
	StartDelay = time.Second
	// RunTimeout is how long a run may stay unreported before it is treated
	// as abandoned (the isolate died mid-run). It is also the safety alarm
	// set before each run, so the loop continues even if the run never returns.
	RunTimeout = 3 * time.Minute
	// IdleInterval is the pause when there was no work: the queue refills
	// slowly (cron discovery), so polling fast would only cost D1 reads.
	IdleInterval = MaxInterval
)

// The Go⇄JS protocol (durable/object), with the controller's run plan.
type (
	Decision   = object.Decision[*RunPlan]
	Request    = object.Request
	Response   = object.Response
	FieldError = object.FieldError
	Event      = object.Event
)

// TickRequest carries alarm metadata.
type TickRequest struct {
	RetryCount int `json:"retry_count"`
}

// Handle runs one operation against the stored state at now. Ops:
// "load" (object constructed), "http" (arg: Request), "tick" (alarm fired;
// arg: TickRequest), "tick_done" (arg: RunOutcome).
func Handle(cfg Config, op, rawState string, arg []byte, now time.Time) Decision {
	s, corrupt := LoadState(rawState, now)
	var d Decision
	if corrupt {
		d.Events = append(d.Events, Event{"event": "enrichment.state_corrupt", "level": "error"})
		d.State = s.Encode(now)
	}
	switch op {
	case "load":
		d.Merge(s.onLoad(now, cfg))
	case "http":
		var req Request
		if err := json.Unmarshal(arg, &req); err != nil {
			d.Response = errorResponse(400, "request", "malformed forwarded request")
			return d
		}
		d.Merge(s.onHTTP(req, now, cfg))
	case "tick":
		var tr TickRequest
		_ = json.Unmarshal(arg, &tr) // metadata only; absent is fine
		d.Merge(s.onTick(tr, now, cfg))
	case "tick_done":
		var o RunOutcome
		if err := json.Unmarshal(arg, &o); err != nil {
			o = RunOutcome{Error: "undecodable run outcome: " + err.Error()}
		}
		d.Merge(s.onTickDone(o, now, cfg))
	default:
		d.Events = append(d.Events, Event{"event": "enrichment.unknown_op", "level": "error", "op": op})
		d.Response = errorResponse(500, "op", "unknown operation "+strconv.Quote(op))
	}
	return d
}

// ensure returns the self-start alarm for a running loop.
func (s State) ensure(now time.Time) int64 {
	if !s.Running {
		return 0
	}
	return now.Add(StartDelay).UnixMilli()
}

// The two upstream hosts, each with its own pacing state and global limit.
const (
	// HostAPI serves lookups (and searches and charts): itunes.apple.com.
	HostAPI = "api"
	// HostStore serves the store pages: apps.apple.com.
	HostStore = "store"
)

// controller decodes the store host's pacing state (pages), or starts it
// afresh when the configured algorithm changed or its state is unreadable.
func (s *State) controller(cfg Config) (pacing.Algorithm, *Event) {
	return decodePacer(cfg, s.Pacing, s.PacingState, HostStore)
}

// lookupController decodes the API host's pacing state (lookups).
func (s *State) lookupController(cfg Config) (pacing.Algorithm, *Event) {
	return decodePacer(cfg, s.Pacing, s.LookupPacingState, HostAPI)
}

func decodePacer(cfg Config, name string, raw json.RawMessage, host string) (pacing.Algorithm, *Event) {
	c, err := pacing.New(cfg.Pacing, cfg.pacingConfig())
	if err != nil {
		c, _ = pacing.New(DefaultPacing, cfg.pacingConfig())
	}
	var ev *Event
	if name == c.Name() && len(raw) > 0 {
		if err := json.Unmarshal(raw, c); err != nil {
			c, _ = pacing.New(c.Name(), cfg.pacingConfig())
			ev = &Event{"event": "enrichment.pacing_reset", "level": "warn", "pacing": c.Name(), "host": host, "reason": "unreadable state"}
		}
	} else if name != "" && name != c.Name() {
		ev = &Event{"event": "enrichment.pacing_reset", "level": "info", "pacing": c.Name(), "host": host, "reason": "was " + name}
	}
	if seed, ok := c.(*pacing.Seed); ok {
		seed.CooldownMs = cfg.Cooldown.Milliseconds() // config wins over stored state
	}
	return c, ev
}

// store keeps both pacing states: c paces pages, l lookups.
func (s *State) store(c, l pacing.Algorithm) {
	s.Pacing, s.PacingState, s.LookupPacingState = c.Name(), encodePacer(c), encodePacer(l)
}

func encodePacer(c pacing.Algorithm) json.RawMessage {
	b, err := json.Marshal(c)
	if err != nil {
		panic("enrichment: encode pacing state: " + err.Error())
	}
	return b
}

// pacers decodes both pacing states, with the events of any reset.
func (s *State) pacers(cfg Config) (pages, lookups pacing.Algorithm, events []Event) {
	pages, pev := s.controller(cfg)
	lookups, lev := s.lookupController(cfg)
	for _, ev := range []*Event{pev, lev} {
		if ev != nil {
			events = append(events, *ev)
		}
	}
	return pages, lookups, events
}

func holdUntil(c pacing.Algorithm) int64 {
	if h, ok := c.(pacing.Holder); ok {
		return h.HoldUntil().UnixMilli()
	}
	return 0
}

func cooldownsOf(c pacing.Algorithm) int {
	if cc, ok := c.(interface{ Cooldowns() int }); ok {
		return cc.Cooldowns()
	}
	return 0
}

func (s State) onLoad(now time.Time, cfg Config) Decision {
	c, l, events := s.pacers(cfg)
	s.store(c, l)
	var facts []ledger.Fact
	if s.LedgerSince == 0 {
		// The ledger starts here: a baseline fact carries the counters so
		// far, so the facts always sum to the counters.
		s.LedgerSince = now.UnixMilli()
		facts = append(facts, ledger.New(cfg.Source(), "controller.baseline", now, s.Totals.Counters(), nil))
	}
	if s.RunStartedAt != 0 {
		// A new instance of the object: the run the old one had in flight
		// died with it (its items stayed queued). Resume now instead of
		// waiting out the safety alarm.
		events = append(events, Event{"event": "enrichment.run_abandoned", "level": "warn", "run_started_at": s.RunStartedAt})
		s.RunStartedAt = 0
		d := Decision{State: s.Encode(now), Events: events, Facts: facts}
		if s.Running {
			d.AlarmAt = now.Add(StartDelay).UnixMilli()
		}
		return d
	}
	return Decision{State: s.Encode(now), EnsureAlarmAt: s.ensure(now), Events: events, Facts: facts}
}

func (s State) onTick(tr TickRequest, now time.Time, cfg Config) Decision {
	ev := Event{"event": "enrichment.tick", "retry_count": tr.RetryCount}
	if !s.Running {
		// stop only flips the flag; this alarm sees it and does not re-arm.
		ev["action"] = "stopped"
		return Decision{Events: []Event{ev}}
	}
	if s.RunStartedAt != 0 {
		if now.Sub(time.UnixMilli(s.RunStartedAt)) < RunTimeout {
			ev["action"] = "run_in_flight"
			return Decision{AlarmAt: time.UnixMilli(s.RunStartedAt).Add(RunTimeout).UnixMilli(), Events: []Event{ev}}
		}
		ev["abandoned_run_started_at"] = s.RunStartedAt
		s.RunStartedAt = 0
	}
	c, l, pevs := s.pacers(cfg)
	events := append([]Event{ev}, pevs...)
	skipPages, probes := s.Parser.pagesFor(now, cfg.ProbeInterval())
	batch := cfg.LookupBatchSize()
	plan, lplan := c.Plan(now), l.Plan(now)
	items := tickItems(plan, lplan, batch, skipPages)
	if skipPages {
		plan.ChunkItems, plan.ChunkPause, plan.StopOnThrottle = lplan.ChunkItems*batch, lplan.ChunkPause, lplan.StopOnThrottle
		probes = min(probes, max(plan.Items, 0))
	}
	noLookups := false
	if items <= 0 && !skipPages && plan.Items > 0 && lplan.Items <= 0 && cfg.LookupFreshness() > 0 {
		// The API host holds, the store host does not: the items whose
		// stored lookup is fresh need only their pages.
		items, noLookups = plan.Items, true
	}
	if items <= 0 {
		// A host holds (cooldown, backoff, Retry-After): every item needs a
		// page and, unless fresh, a lookup, so no work, and the next wake is when both
		// hosts may be called again; the chain of alarms is never broken.
		next := maxTime(c.Done(now, nil), l.Done(now, nil))
		s.store(c, l)
		ev["action"] = "hold"
		for host, a := range map[string]pacing.Algorithm{HostStore: c, HostAPI: l} {
			if h := holdUntil(a); h > now.UnixMilli() {
				ev["hold_remaining_s_"+host] = (h - now.UnixMilli() + 999) / 1000
				ev["hold_remaining_s"] = max((h-now.UnixMilli()+999)/1000, asInt64(ev["hold_remaining_s"]))
			}
		}
		return Decision{State: s.Encode(now), AlarmAt: max(next.UnixMilli(), now.UnixMilli()+1), Events: events}
	}
	plan.Items = items
	s.store(c, l)
	s.RunStartedAt = now.UnixMilli()
	// However fast the pacing would go, a tick's items must fit the
	// platform's per-invocation subrequest limit.
	plan.Items = min(plan.Items, ItemsPerTick(batch, cfg.SubrequestBudget()))
	runCalls, runQueries := RunBudget(cfg.SubrequestBudget())
	// Refreshes that need no page ride the lookups: a tick may take as
	// many items as its lookups carry, its pages still at the store
	// host's pace (BatchSize). Not while pages are paused or lookups held
	// (no refresh runs then: worker/enrichment's withRefreshes).
	tickItems := plan.Items
	if !skipPages && !noLookups {
		tickItems = max(plan.Items, TickItems(lplan.Items, batch, cfg.SubrequestBudget()))
	}
	s.LastPlan = &PlanSummary{At: now.UnixMilli(), Items: plan.Items, ChunkItems: plan.ChunkItems, ChunkPauseMs: plan.ChunkPause.Milliseconds(), NoLookups: noLookups}
	// The outbox's first apps ride along; they stay in the outbox until
	// the run reports them sent.
	s.OutboxHanded = min(len(s.EventOutbox), OutboxPerRun)
	pending := append([]int64(nil), s.EventOutbox[:s.OutboxHanded]...)
	ev["action"] = "run"
	ev["items"] = plan.Items
	ev["lookup_requests"] = max(lplan.Items, 1)
	if noLookups {
		ev["lookup_requests"], ev["no_lookups"] = 0, true
	}
	return Decision{
		State:   s.Encode(now),
		AlarmAt: now.Add(RunTimeout).UnixMilli(), // safety net; tick_done replaces it
		Run: &RunPlan{
			TickAt:          now.UnixMilli(),
			BatchSize:       plan.Items,
			ChunkItems:      plan.ChunkItems,
			ChunkPauseMs:    plan.ChunkPause.Milliseconds(),
			StopOnThrottle:  plan.StopOnThrottle,
			MaxInFlight:     plan.MaxInFlight,
			SkipPages:       skipPages,
			PageProbes:      probes,
			ProbeSeq:        s.Parser.Probes,
			TickSeq:         s.Totals.Ticks,
			Subrequests:     runCalls,
			D1Queries:       runQueries,
			LookupBatch:     batch,
			LookupRequests:  max(lplan.Items, 1),
			LookupFreshS:    int64(cfg.LookupFreshness() / time.Second),
			NoLookups:       noLookups,
			TickItems:       tickItems,
			PendingEnriched: pending,
			HoldPartial:     s.holdPartial(now),
		},
		Events: events,
	}
}

// tickItems is how many items a tick takes from its hosts' plans: each
// item needs a page at the store host's pace and a share of a lookup
// (batch ids a request) at the API host's. While pages are paused (parser
// drift) the lookups alone set it; the store host's pace only the probes.
func tickItems(pages, lookups pacing.Plan, batch int, skipPages bool) int {
	if skipPages {
		return lookups.Items * batch
	}
	return min(pages.Items, lookups.Items*batch)
}

// nextTick is the pace as operators read it (status batch_size and
// interval_ms), under every algorithm: the items the next tick takes at
// the paces now (the first tick after a host's hold, while one holds),
// within the invocation's budget, and how long after that tick's start
// the controller starts the one after it, the work done in time: the
// longer of the two hosts' gaps for the requests the tick sends them
// (pacing.Spacer: a rate paid for, or the seed rules' interval, which
// they wait after the tick's end). Idle polls, holds and Retry-After come
// on top. It plans on fresh copies of the pacing states: nothing is kept.
func (s State) nextTick(now time.Time, cfg Config) (items int, gap time.Duration) {
	c, l, _ := s.pacers(cfg)
	at := max(now.UnixMilli(), holdUntil(c), holdUntil(l))
	batch := cfg.LookupBatchSize()
	skipPages := s.Parser.Drifting()
	items = tickItems(c.Plan(time.UnixMilli(at)), l.Plan(time.UnixMilli(at)), batch, skipPages)
	items = max(0, min(items, ItemsPerTick(batch, cfg.SubrequestBudget())))
	pages, lookups := items*SubrequestsPerItem, (items+batch-1)/batch
	if skipPages {
		pages = 0
	}
	return items, max(spacing(c, pages), spacing(l, lookups))
}

// spacing is a's gap after a tick that sent it requests (TickInterval for
// an algorithm that does not say).
func spacing(a pacing.Algorithm, requests int) time.Duration {
	if sp, ok := a.(pacing.Spacer); ok {
		return sp.TickGap(requests)
	}
	return pacing.TickInterval
}

func (s State) onTickDone(o RunOutcome, now time.Time, cfg Config) Decision {
	totalsBefore := s.Totals
	batch := 0
	if s.LastPlan != nil {
		batch = s.LastPlan.Items
	}
	runStart := now
	if s.RunStartedAt != 0 {
		runStart = time.UnixMilli(s.RunStartedAt)
	}
	s.RunStartedAt = 0
	s.Totals.Ticks++
	byClass := s.Record(o, now)
	c, l, _ := s.pacers(cfg)
	cooldownsBefore := cooldownsOf(c) + cooldownsOf(l)
	capacityBefore, lookupCapacityBefore := c.CapacityPerMin(), l.CapacityPerMin()
	pageOutcomes, lookupOutcomes := o.PacingOutcomes()
	// Each host's pace learns from its own requests only; the next tick
	// comes when both have paid for what they sent, or, while the API host
	// holds and fresh items keep the pages going, when the store host has.
	pagesNext, lookupsNext := c.Done(now, pageOutcomes), l.Done(now, lookupOutcomes)
	next := maxTime(pagesNext, lookupsNext)
	if s.LastPlan != nil && s.LastPlan.NoLookups && o.Picked > 0 {
		next = pagesNext
	}
	if _, seed := c.(*pacing.Seed); seed {
		// The seed rules keep no hold of their own: the upstream told us
		// when it will take requests again. (The rate algorithms hold the
		// host that said so, and only that one.)
		if ra := retryAfter(o); now.Add(ra).After(next) {
			next = now.Add(ra)
		}
	}
	if o.Picked == 0 && o.Skipped == 0 && o.Error == "" {
		idle := now.Add(cfg.IdleWait()) // empty queue: poll slowly, D1 reads cost
		if s.Parser.Drifting() {
			// Pages are paused and no item waits for its lookup (batched
			// lookups clear them in a few ticks): the next probe may take
			// any queued item, so the loop wakes for it.
			idle = minTime(idle, s.Parser.probeDue(cfg.ProbeInterval()))
		}
		next = maxTime(next, idle)
	}
	if o.Picked > 0 {
		s.LastTickAt = now.UnixMilli()
	}
	events := []Event{}
	if dropped := s.settleOutbox(o.UnsentEnriched, runStart); dropped > 0 {
		events = append(events, Event{"event": "enrichment.event_outbox_overflow", "level": "error", "dropped": dropped,
			"kept": len(s.EventOutbox), "action": "app-enriched events lost: the queue has failed for long; rescore the markets"})
	}
	switch s.Parser.observe(o.Results, now) {
	case "drift":
		share, samples := s.Parser.UnparsedShare()
		events = append(events, Event{
			"event": "enrichment.parser_drift", "level": "error", "unparsed_share": round3(share), "samples": samples,
			"action": "store pages paused: lookups go on, items stay queued, one probe page every " + cfg.ProbeInterval().String(),
		})
	case "recovered":
		events = append(events, Event{"event": "enrichment.parser_recovered", "level": "warn", "action": "store pages resumed"})
	}
	if n := cooldownsOf(c) + cooldownsOf(l) - cooldownsBefore; n > 0 {
		s.Totals.Cooldowns += int64(n)
		rate, samples := s.SuccessRate(now)
		events = append(events, Event{
			"event": "enrichment.cooldown", "level": "warn", "pacing": c.Name(),
			"success_rate": round3(rate), "samples": samples, "hold_until": holdUntil(c), "lookup_hold_until": holdUntil(l),
		})
	}
	s.store(c, l)
	s.LastTick = &TickSummary{
		At: now.UnixMilli(), Picked: o.Picked, Requests: len(o.Requests), ByClass: byClass,
		DurationMs: o.DurationMs, NextInMs: next.Sub(now).Milliseconds(), Error: o.Error, Subrequests: o.Subrequests,
	}
	rate, samples := s.SuccessRate(now)
	ev := Event{
		"event": "enrichment.tick_done", "picked": o.Picked, "skipped": o.Skipped, "by_class": byClass,
		"success_rate": round3(rate), "samples": samples, "next_in_ms": next.Sub(now).Milliseconds(),
		"duration_ms": o.DurationMs, "subrequests": o.Subrequests, "pacing": c.Name(), "capacity_per_min": round3(c.CapacityPerMin()),
		"lookup_capacity_per_min": round3(l.CapacityPerMin()),
	}
	if o.Error != "" {
		ev["level"] = "error"
		ev["error"] = o.Error
	}
	events = append([]Event{ev}, events...)
	fact := ledger.New(cfg.Source(), "controller.tick", now, ledger.Diff(s.Totals.Counters(), totalsBefore.Counters()), map[string]any{
		"picked": o.Picked, "requests": len(o.Requests), "by_class": byClass, "batch": batch,
		"capacity_before": round3(capacityBefore), "capacity_after": round3(c.CapacityPerMin()),
		"lookup_capacity_before": round3(lookupCapacityBefore), "lookup_capacity_after": round3(l.CapacityPerMin()),
		"next_in_ms": next.Sub(now).Milliseconds(), "success_rate": round3(rate), "samples": samples,
		"duration_ms": o.DurationMs, "cooldown": s.Totals.Cooldowns > totalsBefore.Cooldowns, "pacing": c.Name(),
	})
	if o.Error != "" {
		fact.Data["error"] = ledger.Truncate(o.Error, maxFactError)
	}
	facts := s.addTick(fact)
	// The minute closes with its last tick: on a stop, or when the next
	// tick falls in a later minute (an idle or slow controller's history
	// does not wait for its next tick).
	if !s.Running || factMinute(next.UnixMilli()) != factMinute(now.UnixMilli()) {
		facts = append(facts, s.closeMinute()...)
	}
	d := Decision{State: s.Encode(now), Events: events, Facts: facts}
	if s.Running { // a stop during the run is honoured here
		d.AlarmAt = max(next.UnixMilli(), now.UnixMilli()+1)
	}
	return d
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (s State) onHTTP(req Request, now time.Time, cfg Config) Decision {
	switch {
	case req.Method == "GET" && req.Path == "/status":
		return Decision{Response: &Response{Status: 200, Body: s.Status(now, cfg)}, EnsureAlarmAt: s.ensure(now)}
	case req.Method == "GET" && req.Path == "/ledger":
		// The counters the ledger's facts sum to (reconciliation).
		return Decision{Response: &Response{Status: 200, Body: map[string]any{"source": cfg.Source(), "counters": s.ledgerCounters()}}}
	case req.Method == "POST" && req.Path == "/ledger/repair":
		// Reconciliation found the counters off their facts: the facts are
		// the truth (durable/ledger.Repair).
		rep, field, msg := ledger.ParseRepair([]byte(req.Body))
		if field != "" {
			return Decision{Response: errorResponse(400, field, msg)}
		}
		repaired, unknown := rep.Apply(s.Totals.Counters())
		if unknown != "" {
			return Decision{Response: errorResponse(409, "delta", "the controller keeps no counter "+strconv.Quote(unknown))}
		}
		refs := s.Totals.counterRefs()
		for k, v := range repaired {
			*refs[k] = v
		}
		f := rep.Fact(cfg.Source(), now)
		return Decision{State: s.Encode(now), Facts: []ledger.Fact{f}, Response: &Response{Status: 200, Body: f}}
	case req.Method == "POST" && req.Path == "/start":
		s.Running = true
		c, l, _ := s.pacers(cfg)
		for _, a := range []pacing.Algorithm{c, l} {
			if r, ok := a.(pacing.Releaser); ok {
				r.Release() // start means: try now, whatever hold is on
			}
		}
		s.store(c, l)
		// Start also means: fetch pages again. A pause for parser drift
		// ends at the operator's word, not only when a probe parses.
		resumed := s.Parser.resume()
		d := s.mutated(now, cfg, "start", now.Add(StartDelay).UnixMilli())
		if resumed {
			d.Events = append(d.Events, pagesResumedEvent("start"))
		}
		return d
	case req.Method == "POST" && req.Path == "/resume-pages":
		// Lifts a parser-drift pause only (the pacing's holds stay).
		resumed := s.Parser.resume()
		d := s.mutated(now, cfg, "resume-pages", 0)
		if resumed {
			d.Events = append(d.Events, pagesResumedEvent("resume-pages"))
			if s.Running {
				d.AlarmBy = now.Add(StartDelay).UnixMilli()
			}
		}
		return d
	case req.Method == "POST" && req.Path == "/stop":
		s.Running = false
		closed := s.closeMinute()
		d := s.mutated(now, cfg, "stop", 0)
		d.Facts = closed
		return d
	case req.Method == "POST" && req.Path == "/reset":
		old := s
		closed := old.closeMinute()
		s = DefaultState()
		s.LedgerSince = old.LedgerSince
		c, l, _ := s.pacers(cfg)
		s.store(c, l)
		d := s.mutated(now, cfg, "reset", now.Add(StartDelay).UnixMilli())
		// The counters start again from zero: the fact says so, after the
		// open minute's.
		d.Facts = append(closed, ledger.New(cfg.Source(), "controller.reset", now, ledger.Diff(Totals{}.Counters(), old.Totals.Counters()), nil))
		return d
	case req.Method == "POST" && req.Path == "/tune":
		t, ferr := ParseTune([]byte(req.Body))
		if ferr != nil {
			return Decision{Response: &Response{Status: 400, Body: ferr}}
		}
		// A tune sets one host's pace: the store host's (pages, one per
		// item) unless it names "host": "api" (lookups, one per batch).
		c, l, _ := s.pacers(cfg)
		target := c
		if t.Host == HostAPI {
			target = l
		}
		host := cmp.Or(t.Host, HostStore)
		before := paceOf(target, now)
		if tn, ok := target.(pacing.Tuner); ok {
			tn.Tune(pacing.TuneRequest{BatchSize: t.BatchSize, IntervalMs: t.IntervalMs, RatePerMin: t.RatePerMin})
		}
		s.store(c, l)
		d := s.mutated(now, cfg, "tune", 0)
		tuned := &Tuned{Host: host, Asked: t, Before: before, After: paceOf(target, now)}
		if _, seed := target.(*pacing.Seed); !seed && (t.BatchSize != nil || t.IntervalMs != nil) && t.RatePerMin == nil {
			tuned.Note = "this host is paced by rate: batch_size and interval_ms set the rate they carry (paces." + host + ".rate_per_min)"
		}
		st := d.Response.Body.(Status)
		st.Tuned = tuned
		d.Response.Body = st
		d.Events[0]["host"], d.Events[0]["before"], d.Events[0]["after"] = host, before, tuned.After
		if s.Running {
			// A faster setting takes effect now, not after the old interval.
			d.AlarmBy = now.Add(MinTuneDelay).UnixMilli()
		}
		return d
	}
	return Decision{Response: errorResponse(404, "path", "no such controller route: "+req.Method+" "+req.Path)}
}

// pagesResumedEvent says an operator lifted a parser-drift pause.
func pagesResumedEvent(by string) Event {
	return Event{"event": "enrichment.parser_resumed", "level": "warn", "by": by,
		"action": "store pages resumed by the operator: a fresh window judges the markup again"}
}

// mutated persists a control change and answers with the new status.
func (s State) mutated(now time.Time, cfg Config, action string, alarmAt int64) Decision {
	st := s.Status(now, cfg)
	d := Decision{
		State:    s.Encode(now),
		AlarmAt:  alarmAt,
		Response: &Response{Status: 200, Body: st},
		Events: []Event{{
			"event": "enrichment.control", "action": action, "running": s.Running, "pacing": st.Pacing,
		}},
	}
	if alarmAt == 0 {
		d.EnsureAlarmAt = s.ensure(now)
	}
	return d
}

// Tune is a manual override of the adaptive parameters of one host's pace.
type Tune struct {
	// Host is HostStore (the default) or HostAPI.
	Host       string   `json:"host,omitempty"`
	BatchSize  *int     `json:"batch_size,omitempty"`
	IntervalMs *int64   `json:"interval_ms,omitempty"`
	RatePerMin *float64 `json:"rate_per_min,omitempty"`
}

// Tuned is what a tune changed, in its answer: the host it paced, what
// was asked, and the pace before and after.
type Tuned struct {
	Host   string `json:"host"`
	Asked  Tune   `json:"asked"`
	Before Pace   `json:"before"`
	After  Pace   `json:"after"`
	// Note says how the asked fields were read, when not as given.
	Note string `json:"note,omitempty"`
}

// Pace is a host's pace as a tune sets it: the rate for a rate
// algorithm, the batch and interval for the seed rules.
type Pace struct {
	RatePerMin *float64 `json:"rate_per_min,omitempty"`
	BatchSize  *int     `json:"batch_size,omitempty"`
	IntervalMs *int64   `json:"interval_ms,omitempty"`
}

func paceOf(a pacing.Algorithm, now time.Time) Pace {
	if seed, ok := a.(*pacing.Seed); ok {
		b, i := seed.Batch, seed.IntervalMs
		return Pace{BatchSize: &b, IntervalMs: &i}
	}
	var p Pace
	if d, ok := a.(pacing.Describer); ok {
		if r, ok := d.Describe(now)["rate_per_min"].(float64); ok {
			p.RatePerMin = &r
		}
	}
	return p
}

// Bounds of an operator's tune.
const (
	MinBatch    = pacing.SeedMinBatch
	MaxBatch    = pacing.SeedMaxBatch
	MinInterval = pacing.SeedMinInterval
	MaxInterval = pacing.SeedMaxInterval
	// MinTuneDelay: after a tune the next tick comes at most this soon.
	MinTuneDelay = time.Second
)

var errorResponse = object.ErrorResponse

// ParseTune validates a tune body: a JSON object with batch_size and/or
// interval_ms, integers within the controller's bounds. Out-of-range values
// are rejected, not clamped, so the operator learns the bounds.
func ParseTune(body []byte) (Tune, *FieldError) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return Tune{}, &FieldError{Error: "body must be a JSON object", Field: "body"}
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var t Tune
	for _, k := range keys {
		raw := fields[k]
		switch k {
		case "batch_size":
			v, ok := parseInt(raw)
			if !ok || v < MinBatch || v > MaxBatch {
				return Tune{}, &FieldError{Field: k, Error: fmt.Sprintf("batch_size must be an integer from %d to %d", MinBatch, MaxBatch)}
			}
			n := int(v)
			t.BatchSize = &n
		case "interval_ms":
			v, ok := parseInt(raw)
			lo, hi := MinInterval.Milliseconds(), MaxInterval.Milliseconds()
			if !ok || v < lo || v > hi {
				return Tune{}, &FieldError{Field: k, Error: fmt.Sprintf("interval_ms must be an integer from %d to %d", lo, hi)}
			}
			t.IntervalMs = &v
		case "rate_per_min":
			var f float64
			if err := json.Unmarshal(raw, &f); err != nil || f < pacing.MinRatePerMin || f > pacing.MaxRatePerMin {
				return Tune{}, &FieldError{Field: k, Error: fmt.Sprintf("rate_per_min must be a number from %g to %g", pacing.MinRatePerMin, pacing.MaxRatePerMin)}
			}
			t.RatePerMin = &f
		case "host":
			if err := json.Unmarshal(raw, &t.Host); err != nil || (t.Host != HostAPI && t.Host != HostStore) {
				return Tune{}, &FieldError{Field: k, Error: `host must be "` + HostStore + `" (pages, the default) or "` + HostAPI + `" (lookups)`}
			}
		default:
			return Tune{}, &FieldError{Field: k, Error: "unknown field " + strconv.Quote(k) + " (allowed: host, batch_size, interval_ms, rate_per_min)"}
		}
	}
	if t.BatchSize == nil && t.IntervalMs == nil && t.RatePerMin == nil {
		return Tune{}, &FieldError{Field: "body", Error: "nothing to tune: give batch_size, interval_ms and/or rate_per_min"}
	}
	return t, nil
}

func parseInt(raw json.RawMessage) (int64, bool) {
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return 0, false
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// Status is the operator's view at GET /v1/enrichment/status.
type Status struct {
	Running bool `json:"running"`
	// InCooldown: the pacing algorithm holds all traffic (cooldown, block
	// backoff, Retry-After) for CooldownRemainingS more seconds.
	InCooldown         bool  `json:"in_cooldown"`
	CooldownRemainingS int64 `json:"cooldown_remaining_s"`
	RunInFlight        bool  `json:"run_in_flight"`
	// BatchSize and IntervalMs are the pace under every algorithm
	// (nextTick): the items the next tick takes, and how long after its
	// start the controller starts the one after it. BatchSize × 60,000 ÷
	// IntervalMs is the items a minute the pace plans (a rate algorithm's
	// store host rate, one page an item; a tune's batch_size and
	// interval_ms set the rate they carry).
	BatchSize  int   `json:"batch_size"`
	IntervalMs int64 `json:"interval_ms"`
	// Tuned is, in a tune's answer only, what the tune changed.
	Tuned *Tuned `json:"tuned,omitempty"`
	// Pacing names the algorithm; CapacityEstimatePerMin is its estimate of
	// the upstream's capacity in requests per minute (0 = not learned yet).
	Pacing                 string         `json:"pacing"`
	CapacityEstimatePerMin float64        `json:"capacity_estimate_per_min"`
	PacingDetail           map[string]any `json:"pacing_detail,omitempty"`
	Totals                 Totals         `json:"totals"`
	Rolling                Rolling        `json:"rolling"`
	// ProjectedPerHour and ProjectedPerDay are Rolling.CompletionsPerMinute
	// × 60 and × 1,440, 0 during a cooldown; ProjectionBasis says so.
	ProjectedPerHour int64        `json:"projected_per_hour"`
	ProjectedPerDay  int64        `json:"projected_per_day"`
	ProjectionBasis  string       `json:"projection_basis"`
	LastTickAt       *string      `json:"last_tick_at"`
	LastPlan         *PlanSummary `json:"last_plan,omitempty"`
	LastTick         *TickSummary `json:"last_tick,omitempty"`
	// ParserHealth says whether store pages still parse (parser drift).
	ParserHealth ParserStatus `json:"parser_health"`
	// EventOutbox is how many enriched apps wait for their app-enriched
	// event (a send failed; the next runs send them).
	EventOutbox int `json:"event_outbox"`
	// LastHoldCapped is the latest upstream hold hint cut to the cap
	// (UPSTREAM_MAX_HOLD_S); null when none ever was.
	LastHoldCapped *HoldCapped `json:"last_hold_capped"`
	// RequestsPerEnrichedApp is the upstream's cost: lookup and page
	// requests that reached it, per app completed (lifetime; 0 before any).
	RequestsPerEnrichedApp float64 `json:"requests_per_enriched_app"`
	// Paces is each upstream host's own pace: "api" (lookups) and "store"
	// (pages). The top-level pacing fields above are the store host's,
	// whose one page per app sets the crawl's speed.
	Paces map[string]HostPace `json:"paces"`
	Now   string              `json:"now"`
}

// HostPace is one upstream host's pace as operators see it.
type HostPace struct {
	// Requests is what the controller sends this host: "lookup" or "page".
	Requests string `json:"requests"`
	// RatePerMin is the pace now in requests per minute (the algorithm's
	// rate; 0 for the seed rules, which pace by batch and interval).
	RatePerMin             float64 `json:"rate_per_min"`
	CapacityEstimatePerMin float64 `json:"capacity_estimate_per_min"`
	InHold                 bool    `json:"in_hold"`
	HoldRemainingS         int64   `json:"hold_remaining_s"`
	// Sent and Refused are lifetime requests that reached the host and its
	// 403/429 answers among them.
	Sent    int64          `json:"sent"`
	Refused int64          `json:"refused"`
	Detail  map[string]any `json:"detail,omitempty"`
}

// hostPace describes one pacing state at now.
func hostPace(a pacing.Algorithm, requests string, sent, refused int64, now time.Time) HostPace {
	hp := HostPace{Requests: requests, CapacityEstimatePerMin: round3(a.CapacityPerMin()), Sent: sent, Refused: refused}
	if h := holdUntil(a); h > now.UnixMilli() {
		hp.InHold, hp.HoldRemainingS = true, (h-now.UnixMilli()+999)/1000
	}
	if d, ok := a.(pacing.Describer); ok {
		hp.Detail = d.Describe(now)
		if r, ok := hp.Detail["rate_per_min"].(float64); ok {
			hp.RatePerMin = r
		}
	}
	return hp
}

// Rolling describes the metrics window: the minute buckets that start
// within the last WindowS seconds (MetricsWindowMinutes).
type Rolling struct {
	WindowS     int     `json:"window_s"`
	SuccessRate float64 `json:"success_rate"`
	// SampleSize is the number of upstream exchanges behind SuccessRate;
	// below MinSamples the controller does not adapt.
	SampleSize  int    `json:"sample_size"`
	Confidence  string `json:"confidence"`
	Dispatched  int    `json:"dispatched"`
	Completed   int    `json:"completed"`
	Failed      int    `json:"failed"`
	RateLimited int    `json:"rate_limited"`
	ItemErrors  int    `json:"item_errors"`
	// CompletionsPerMinute is Completed ÷ the window's length
	// (MetricsWindowMinutes), whatever part of it the controller has run.
	CompletionsPerMinute float64 `json:"completions_per_minute"`
}

// Status reports the controller at now.
func (s State) Status(now time.Time, cfg Config) Status {
	rate, samples := s.SuccessRate(now)
	w := s.Window(now)
	cpm := completionsPerMinute(w)
	c, l, _ := s.pacers(cfg)
	hold := holdUntil(c)
	st := Status{
		Running:                s.Running,
		ProjectionBasis:        ProjectionBasis,
		InCooldown:             hold > now.UnixMilli(),
		RunInFlight:            s.RunStartedAt != 0,
		Pacing:                 c.Name(),
		CapacityEstimatePerMin: round3(c.CapacityPerMin()),
		LastPlan:               s.LastPlan,
		Totals:                 s.Totals,
		Rolling: Rolling{
			WindowS: MetricsWindowMinutes * 60, SuccessRate: round3(rate), SampleSize: samples,
			Confidence: confidence(samples), Dispatched: w.Dispatched, Completed: w.Completed,
			Failed: w.Failed, RateLimited: w.RateLimited, ItemErrors: w.ItemErrors,
			CompletionsPerMinute: round3(cpm),
		},
		LastTick:               s.LastTick,
		ParserHealth:           s.Parser.Status(),
		LastHoldCapped:         s.LastHoldCapped,
		EventOutbox:            len(s.EventOutbox),
		RequestsPerEnrichedApp: requestsPerApp(s.Totals),
		Paces: map[string]HostPace{
			HostAPI:   hostPace(l, RequestLookup, s.Totals.LookupRequests, s.Totals.LookupRefusals, now),
			HostStore: hostPace(c, RequestPage, s.Totals.PageRequests, s.Totals.PageRefusals, now),
		},
		Now: now.UTC().Format(time.RFC3339Nano),
	}
	if d, ok := c.(pacing.Describer); ok {
		st.PacingDetail = d.Describe(now)
	}
	items, gap := s.nextTick(now, cfg)
	st.BatchSize, st.IntervalMs = items, gap.Milliseconds()
	if st.InCooldown {
		st.CooldownRemainingS = (hold - now.UnixMilli() + 999) / 1000
	} else {
		// A controller in cooldown completes nothing: project zero, not the past.
		st.ProjectedPerHour = int64(math.Round(cpm * 60))
		st.ProjectedPerDay = int64(math.Round(cpm * 60 * 24))
	}
	if s.LastTickAt != 0 {
		t := time.UnixMilli(s.LastTickAt).UTC().Format(time.RFC3339Nano)
		st.LastTickAt = &t
	}
	return st
}

// completionsPerMinute is the window's completions over the window's whole
// length, MetricsWindowMinutes, however young the controller: a burst in
// the window's last minute is not extrapolated as if it had lasted all of it.
func completionsPerMinute(w Bucket) float64 {
	return float64(w.Completed) / MetricsWindowMinutes
}

// ProjectionBasis states how projected_per_hour and projected_per_day are
// made: the one projection of the status and the dashboard.
var ProjectionBasis = fmt.Sprintf("measured: apps completed in the controller's last %d min ÷ %d, × 1,440 (0 during a cooldown)",
	MetricsWindowMinutes, MetricsWindowMinutes)

func confidence(samples int) string {
	switch {
	case samples == 0:
		return "none"
	case samples < pacing.SeedMinSamples:
		return "low"
	case samples < 20:
		return "medium"
	default:
		return "high"
	}
}

func asInt64(v any) int64 {
	n, _ := v.(int64)
	return n
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// requestsPerApp is the upstream requests per completed app, 0 before any.
func requestsPerApp(t Totals) float64 {
	if t.Completed == 0 {
		return 0
	}
	return round3(float64(t.LookupRequests+t.PageRequests) / float64(t.Completed))
}
