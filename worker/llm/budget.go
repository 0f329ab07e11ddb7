package llm

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Budget accounting: a per-minute token budget and a daily spend cap (UTC
// days). Pure: the Ledger is plain state the caller stores (a Durable
// Object's storage), every function takes the clock.
//
// Never overspend: Reserve admits a call only if the day's settled spend,
// plus what calls in flight have reserved, plus this call's worst case
// (MaxPromptTokens at the input price and the whole MaxTokens at the output
// price) stays within the cap. Settle then charges what the endpoint
// reported and releases the reservation, so the cap only bites on real
// spend plus in-flight worst cases.

// Money is in micro-dollars (1e-6 USD): integers, so a day of small charges
// adds up exactly.
type MicroUSD = int64

// Bounds of the budget state.
const (
	// minuteWindow is the per-minute budget's sliding window.
	minuteWindow = time.Minute
	// MaxWindowEntries caps the calls remembered in the window (the ledger
	// is stored on every call; a runaway loop must not grow it).
	MaxWindowEntries = 512
	// MaxInFlight caps reservations not yet settled; one lost settle
	// (an isolate evicted mid-call) must not hold the cap forever, so
	// ExpireStale drops reservations older than StaleReservation.
	MaxInFlight      = 64
	StaleReservation = 15 * time.Minute
	dayLayout        = "2006-01-02"
)

// Price is a model's list price in micro-dollars per million tokens (e.g.
// $0.15/Mtok in = 150000).
type Price struct {
	InputPerMTok  MicroUSD `json:"input_per_mtok"`
	OutputPerMTok MicroUSD `json:"output_per_mtok"`
}

// Cost is the price of a token count, rounded up to a whole micro-dollar so
// spend is never under-counted.
func (p Price) Cost(prompt, completion int64) MicroUSD {
	return ceilDiv(prompt*p.InputPerMTok, 1_000_000) + ceilDiv(completion*p.OutputPerMTok, 1_000_000)
}

func ceilDiv(a, b int64) int64 {
	if a <= 0 {
		return 0
	}
	return (a + b - 1) / b
}

// Budget is the configured limits (vars LLM_TOKENS_PER_MINUTE,
// LLM_DAILY_CAP_USD and the model's price).
type Budget struct {
	TokensPerMinute int64
	DailyCap        MicroUSD
	Price           Price
}

// Use is one call in the minute window.
type Use struct {
	ID     string    `json:"id"`
	At     time.Time `json:"at"`
	Tokens int64     `json:"tokens"`
}

// Reservation is one admitted call, until Settle.
type Reservation struct {
	ID string `json:"id"`
	// Day is the UTC day the call is charged to (the day it started).
	Day    string    `json:"day"`
	At     time.Time `json:"at"`
	Tokens int64     `json:"tokens"` // estimate, in the minute window
	Cost   MicroUSD  `json:"cost"`   // worst case, held against the cap
}

// Ledger is the budget's state.
type Ledger struct {
	Day      string        `json:"day"`
	Spent    MicroUSD      `json:"spent"` // settled today
	Window   []Use         `json:"window"`
	InFlight []Reservation `json:"in_flight"`
}

// Reasons a call is refused.
const (
	ReasonDailyCap = "daily_cap"     // the cap would be passed: stop until tomorrow
	ReasonMinute   = "minute_tokens" // wait for the minute window to drain
	ReasonTooLarge = "too_large"     // this call alone exceeds a limit: never admissible
	ReasonBusy     = "in_flight"     // MaxInFlight calls are in flight
)

// Verdict is Reserve's answer.
type Verdict struct {
	OK     bool
	Reason string
	// RetryAt is when a ReasonMinute refusal can be retried (zero otherwise;
	// ReasonDailyCap waits for the next UTC day).
	RetryAt time.Time
}

// Call is what Reserve needs to know of a request.
type Call struct {
	ID        string // unique per attempt (brief id + attempt)
	Estimate  int64  // EstimatePrompt + MaxTokens: the minute-budget cost
	MaxPrompt int64  // MaxPromptTokens: the cap's worst-case prompt
	MaxTokens int64  // the completion bound
}

// CallOf describes a request for Reserve.
func CallOf(id string, req Request) Call {
	return Call{ID: id, Estimate: EstimatePrompt(req.Messages) + int64(req.MaxTokens),
		MaxPrompt: MaxPromptTokens(req.Messages), MaxTokens: int64(req.MaxTokens)}
}

// Day is t's UTC day.
func Day(t time.Time) string { return t.UTC().Format(dayLayout) }

// roll starts a new day's spend when the day changed.
func (l Ledger) roll(now time.Time) Ledger {
	if d := Day(now); d != l.Day {
		l.Day, l.Spent = d, 0
	}
	return l
}

// ExpireStale drops window entries older than the window and reservations
// older than StaleReservation (their calls are presumed lost; if one still
// settles, Settle charges it anyway).
func (l Ledger) ExpireStale(now time.Time) Ledger {
	l = l.roll(now)
	w := make([]Use, 0, len(l.Window))
	for _, u := range l.Window {
		if now.Sub(u.At) < minuteWindow {
			w = append(w, u)
		}
	}
	l.Window = w
	f := make([]Reservation, 0, len(l.InFlight))
	for _, r := range l.InFlight {
		if now.Sub(r.At) < StaleReservation {
			f = append(f, r)
		}
	}
	l.InFlight = f
	return l
}

// Reserved is the worst-case cost held by today's calls in flight.
func (l Ledger) Reserved() MicroUSD {
	var s MicroUSD
	for _, r := range l.InFlight {
		if r.Day == l.Day {
			s += r.Cost
		}
	}
	return s
}

func (l Ledger) windowTokens() int64 {
	var s int64
	for _, u := range l.Window {
		s += u.Tokens
	}
	return s
}

// Reserve decides whether a call may start now and, if so, returns the
// ledger holding its reservation. A refused call leaves the ledger as it
// was (apart from expiry).
func (b Budget) Reserve(l Ledger, c Call, now time.Time) (Ledger, Reservation, Verdict) {
	l = l.ExpireStale(now)
	worst := b.Price.Cost(c.MaxPrompt, c.MaxTokens)
	switch {
	case c.Estimate > b.TokensPerMinute || worst > b.DailyCap:
		return l, Reservation{}, Verdict{Reason: ReasonTooLarge}
	case l.Spent+l.Reserved()+worst > b.DailyCap:
		return l, Reservation{}, Verdict{Reason: ReasonDailyCap}
	case len(l.InFlight) >= MaxInFlight || len(l.Window) >= MaxWindowEntries:
		return l, Reservation{}, Verdict{Reason: ReasonBusy, RetryAt: now.Add(time.Second)}
	}
	if used := l.windowTokens(); used+c.Estimate > b.TokensPerMinute {
		// The earliest time enough of the window has aged out.
		w := slices.SortedFunc(slices.Values(l.Window), func(x, y Use) int { return x.At.Compare(y.At) })
		free := b.TokensPerMinute - used
		at := now
		for _, u := range w {
			free += u.Tokens
			at = u.At.Add(minuteWindow)
			if free >= c.Estimate {
				break
			}
		}
		return l, Reservation{}, Verdict{Reason: ReasonMinute, RetryAt: at}
	}
	r := Reservation{ID: c.ID, Day: l.Day, At: now, Tokens: c.Estimate, Cost: worst}
	l.Window = append(slices.Clone(l.Window), Use{ID: c.ID, At: now, Tokens: c.Estimate})
	l.InFlight = append(slices.Clone(l.InFlight), r)
	return l, r, Verdict{OK: true}
}

// Charge is one settled call, for the ledger of spend per day, cluster and
// brief.
type Charge struct {
	ID               string   `json:"id"`
	Day              string   `json:"day"`
	ClusterID        string   `json:"cluster_id"`
	BriefID          string   `json:"brief_id"`
	PromptTokens     int64    `json:"prompt_tokens"`
	CompletionTokens int64    `json:"completion_tokens"`
	Cost             MicroUSD `json:"cost"`
	// Overrun is true when the endpoint counted more than the reservation
	// allowed for (it should not happen: the reservation is a bound).
	Overrun bool `json:"overrun,omitempty"`
}

// Settle charges a finished call (successful or not: a failed call that
// reports usage was billed) and releases its reservation. A call whose
// reservation is unknown (expired) is charged all the same. With u zero
// (the call failed before the endpoint counted anything) nothing is spent.
func (b Budget) Settle(l Ledger, r Reservation, u Usage, now time.Time) (Ledger, Charge) {
	l = l.roll(now)
	cost := b.Price.Cost(u.PromptTokens, u.CompletionTokens)
	ch := Charge{ID: r.ID, Day: cmp.Or(r.Day, l.Day), PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
		Cost: cost, Overrun: cost > r.Cost}
	l.InFlight = slices.DeleteFunc(slices.Clone(l.InFlight), func(x Reservation) bool { return x.ID == r.ID })
	// The minute window holds what was really used.
	w := slices.Clone(l.Window)
	for i := range w {
		if w[i].ID == r.ID {
			w[i].Tokens = u.PromptTokens + u.CompletionTokens
		}
	}
	l.Window = w
	if ch.Day == l.Day {
		l.Spent += cost
	}
	return l, ch
}

// Status is the analyst's budget line for the status and the dashboard.
type Status struct {
	Day       string   `json:"day"`
	Spent     MicroUSD `json:"spent_micro_usd"`
	Reserved  MicroUSD `json:"reserved_micro_usd"`
	Cap       MicroUSD `json:"cap_micro_usd"`
	AtCap     bool     `json:"at_cap"`
	Message   string   `json:"message"`
	WindowTok int64    `json:"minute_tokens"`
}

// Status reports spend against the cap. AtCap is true once a call of
// typical size (typical, as CallOf would describe it) can no longer be
// admitted today.
func (b Budget) Status(l Ledger, typical Call, now time.Time) Status {
	l = l.ExpireStale(now)
	s := Status{Day: l.Day, Spent: l.Spent, Reserved: l.Reserved(), Cap: b.DailyCap, WindowTok: l.windowTokens()}
	s.AtCap = l.Spent+s.Reserved+b.Price.Cost(typical.MaxPrompt, typical.MaxTokens) > b.DailyCap
	if s.AtCap {
		s.Message = fmt.Sprintf("daily LLM spend cap reached: $%s of $%s spent on %s; the analyst resumes tomorrow (UTC)",
			usd(s.Spent), usd(s.Cap), s.Day)
	} else {
		s.Message = fmt.Sprintf("$%s of $%s spent on %s", usd(s.Spent), usd(s.Cap), s.Day)
	}
	return s
}

// usd renders micro-dollars as dollars with 4 decimals (rounded up).
func usd(m MicroUSD) string {
	c := ceilDiv(m, 100) // hundredths of a cent
	return fmt.Sprintf("%d.%04d", c/10000, c%10000)
}

// Spend sums charges per day, per cluster (of that day) and per brief.
type Spend struct {
	Day       string              `json:"day"`
	Total     MicroUSD            `json:"total"`
	ByCluster map[string]MicroUSD `json:"by_cluster"`
	ByBrief   map[string]MicroUSD `json:"by_brief"`
}

// SummarizeSpend totals one day's charges.
func SummarizeSpend(charges []Charge, day string) Spend {
	s := Spend{Day: day, ByCluster: map[string]MicroUSD{}, ByBrief: map[string]MicroUSD{}}
	for _, c := range charges {
		if c.Day != day {
			continue
		}
		s.Total += c.Cost
		s.ByCluster[c.ClusterID] += c.Cost
		if c.BriefID != "" {
			s.ByBrief[c.BriefID] += c.Cost
		}
	}
	return s
}

// USD renders micro-dollars as dollars with 4 decimals (rounded up).
func USD(m MicroUSD) string { return usd(m) }
