package sim

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"storecrawl/durable/pacing"
)

// tickLog wraps a controller and writes one line per tick (-ticks): what
// it planned, what the tick's requests said, when it wakes next and its
// own view (pacing.Describer: rate, ceiling, phase, …). The per-minute
// trace shows where a run lost goodput; this shows which decision did.
type tickLog struct {
	pacing.Algorithm
	w     io.Writer
	plan  string
	chunk int // the plan's items per chunk
}

// Cooldowns forwards the wrapped controller's block count (the metrics
// read it).
func (l *tickLog) Cooldowns() int {
	if c, ok := l.Algorithm.(interface{ Cooldowns() int }); ok {
		return c.Cooldowns()
	}
	return 0
}

func (l *tickLog) Plan(now time.Time) pacing.Plan {
	p := l.Algorithm.Plan(now)
	l.chunk = p.ChunkItems
	l.plan = fmt.Sprintf("%s  items=%d chunk=%d pause=%s", sinceEpoch(now), p.Items, p.ChunkItems, p.ChunkPause.Round(time.Millisecond))
	if p.MaxInFlight > 0 {
		l.plan += fmt.Sprintf(" inflight=%d", p.MaxInFlight)
	}
	if !p.NotBefore.Before(now) {
		l.plan += " not_before=" + sinceEpoch(p.NotBefore)
	}
	return p
}

func (l *tickLog) Done(now time.Time, outcomes []pacing.Outcome) time.Time {
	next := l.Algorithm.Done(now, outcomes)
	a := countAnswers(outcomes)
	fmt.Fprintf(l.w, "%s → %s | sent=%d ok=%d refused=%d 5xx=%d timeout=%d chunks=%s | next=%s cap=%.1f%s\n",
		l.plan, sinceEpoch(now), a.sent, a.ok, a.refused, a.serverErr, a.timeouts, chunkSends(outcomes, l.chunk),
		sinceEpoch(next), l.CapacityPerMin(), described(l.Algorithm, now))
	return next
}

// answers counts a tick's outcomes by kind (ok: served or not found).
type answers struct{ sent, ok, refused, serverErr, timeouts int }

func countAnswers(outcomes []pacing.Outcome) answers {
	a := answers{sent: len(outcomes)}
	for _, o := range outcomes {
		switch o.Kind {
		case pacing.KindOK, pacing.KindNotFound:
			a.ok++
		case pacing.KindThrottled:
			a.refused++
		case pacing.KindServerError:
			a.serverErr++
		case pacing.KindTimeout:
			a.timeouts++
		}
	}
	return a
}

// tickChunksShown bounds the chunks a -ticks line lists; the rest are
// counted.
const tickChunksShown = 4

// chunkSends lists when each chunk's first request went and how many it
// sent ("6.100s×4,6.667s×6"), so a burst across chunks, or across a tick's
// boundary, shows.
func chunkSends(outcomes []pacing.Outcome, chunkItems int) string {
	if len(outcomes) == 0 || chunkItems <= 0 {
		return "-"
	}
	type chunk struct {
		at   time.Time
		reqs int
	}
	var cs []chunk
	for _, o := range outcomes { // in send order, chunk by chunk
		k := o.Item / chunkItems
		for len(cs) <= k {
			cs = append(cs, chunk{})
		}
		if cs[k].reqs == 0 || o.SentAt.Before(cs[k].at) {
			cs[k].at = o.SentAt
		}
		cs[k].reqs++
	}
	var parts []string
	for _, c := range cs[:min(len(cs), tickChunksShown)] {
		parts = append(parts, fmt.Sprintf("%s×%d", sinceEpoch(c.at), c.reqs))
	}
	if len(cs) > tickChunksShown {
		parts = append(parts, fmt.Sprintf("+%d more", len(cs)-tickChunksShown))
	}
	return strings.Join(parts, ",")
}

// sinceEpoch is a simulated time as the run's offset (seconds, ms precision).
func sinceEpoch(t time.Time) string {
	return fmt.Sprintf("%.3fs", t.Sub(epoch).Seconds())
}

// described is the controller's Describe as " | k=v …" in key order ("" if
// it has none); floats keep one decimal.
func described(a pacing.Algorithm, now time.Time) string {
	d, ok := a.(pacing.Describer)
	if !ok {
		return ""
	}
	m := d.Describe(now)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(" |")
	for _, k := range keys {
		v := m[k]
		if f, ok := v.(float64); ok {
			v = math.Round(f*10) / 10
		}
		fmt.Fprintf(&b, " %s=%v", k, v)
	}
	return b.String()
}

// runTicks simulates sc × name like runOne, writing every tick to w under
// a heading.
func runTicks(w io.Writer, sc *Scenario, name string, trace bool) Metrics {
	return runWrapped(sc, name, trace, func(ctl pacing.Algorithm) pacing.Algorithm {
		fmt.Fprintf(w, "\n%s × %s: every tick: its plan at its start → its end (s since the start) | its answers | the next wake-up, the capacity estimate | the controller's view\n", sc.Name, name)
		return &tickLog{Algorithm: ctl, w: w}
	})
}
