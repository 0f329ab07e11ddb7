package llm

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 23, 50, 0, 0, time.UTC)

// $1/Mtok in, $2/Mtok out: 1 token in = 1 µ$, 1 token out = 2 µ$.
var price = Price{InputPerMTok: 1_000_000, OutputPerMTok: 2_000_000}

func TestPriceCostRoundsUp(t *testing.T) {
	p := Price{InputPerMTok: 150_000, OutputPerMTok: 600_000} // $0.15 / $0.60
	if got := p.Cost(1000, 500); got != 150+300 {
		t.Errorf("cost %d", got)
	}
	if got := p.Cost(1, 0); got != 1 {
		t.Errorf("a token costs at least a micro-dollar when priced: %d", got)
	}
	if got := p.Cost(0, 0); got != 0 {
		t.Errorf("nothing costs nothing: %d", got)
	}
}

func TestBudgetNeverOverspends(t *testing.T) {
	b := Budget{TokensPerMinute: 1_000_000, DailyCap: 10_000, Price: price}
	var l Ledger
	now := t0
	c := Call{Estimate: 500, MaxPrompt: 2000, MaxTokens: 1000} // worst case 2000 + 2000 = 4000 µ$
	var spent int64
	admitted := 0
	for i := range 20 {
		c.ID = string(rune('a' + i))
		var r Reservation
		var v Verdict
		l, r, v = b.Reserve(l, c, now)
		if !v.OK {
			if v.Reason != ReasonDailyCap {
				t.Fatalf("call %d refused for %s", i, v.Reason)
			}
			break
		}
		admitted++
		// The endpoint counts less than the worst case, as it does.
		var ch Charge
		l, ch = b.Settle(l, r, Usage{PromptTokens: 600, CompletionTokens: 400}, now)
		spent += ch.Cost
		if ch.Cost != 600+800 || ch.Overrun {
			t.Fatalf("charge %+v", ch)
		}
		if l.Spent > b.DailyCap {
			t.Fatalf("overspent: %d > %d", l.Spent, b.DailyCap)
		}
		now = now.Add(time.Second)
	}
	// 1400 µ$ a call; a call needs 4000 of headroom: admitted while
	// spent+4000 <= 10000, i.e. spent <= 6000 → 5 calls (spent 7000).
	if admitted != 5 || l.Spent != 7000 || spent != 7000 {
		t.Errorf("admitted %d, spent %d (ledger %d)", admitted, spent, l.Spent)
	}
	st := b.Status(l, c, now)
	if !st.AtCap || !strings.Contains(st.Message, "cap reached") || st.Spent != 7000 {
		t.Errorf("status %+v", st)
	}
	// Calls in flight hold their worst case: two concurrent calls cannot
	// both take the last headroom.
	var l2 Ledger
	b2 := Budget{TokensPerMinute: 1_000_000, DailyCap: 6000, Price: price}
	l2, _, v1 := b2.Reserve(l2, Call{ID: "x", Estimate: 1, MaxPrompt: 2000, MaxTokens: 1000}, t0)
	l2, _, v2 := b2.Reserve(l2, Call{ID: "y", Estimate: 1, MaxPrompt: 2000, MaxTokens: 1000}, t0)
	if !v1.OK || v2.OK || v2.Reason != ReasonDailyCap || l2.Reserved() != 4000 {
		t.Errorf("concurrent reservations: %+v %+v reserved %d", v1, v2, l2.Reserved())
	}
}

func TestBudgetNewDayAndStaleReservations(t *testing.T) {
	b := Budget{TokensPerMinute: 1_000_000, DailyCap: 5000, Price: price}
	c := Call{ID: "a", Estimate: 10, MaxPrompt: 1000, MaxTokens: 1000} // worst 3000
	l, r, v := b.Reserve(Ledger{}, c, t0)
	if !v.OK {
		t.Fatal(v)
	}
	l, _ = b.Settle(l, r, Usage{PromptTokens: 1000, CompletionTokens: 500}, t0) // 2000 spent
	if _, _, v := b.Reserve(l, Call{ID: "b", Estimate: 10, MaxPrompt: 1000, MaxTokens: 1000}, t0.Add(time.Minute)); !v.OK {
		t.Fatal("2000 + 3000 worst case fits 5000 exactly, so this must pass")
	}
	if _, _, v := b.Reserve(l, Call{ID: "b", Estimate: 10, MaxPrompt: 1001, MaxTokens: 1000}, t0.Add(time.Minute)); v.OK || v.Reason != ReasonDailyCap {
		t.Fatalf("one micro-dollar over the cap must be refused: %+v", v)
	}
	// Next UTC day: spend starts from zero.
	tomorrow := t0.Add(15 * time.Minute)
	l, r2, v := b.Reserve(l, Call{ID: "c", Estimate: 10, MaxPrompt: 1000, MaxTokens: 1000}, tomorrow)
	if !v.OK || l.Day != "2026-03-02" || l.Spent != 0 || r2.Day != "2026-03-02" {
		t.Fatalf("new day: %+v %+v", v, l)
	}
	// A call that started yesterday and settles today is charged to
	// yesterday, not to today's cap.
	y, ry, _ := b.Reserve(Ledger{}, Call{ID: "d", Estimate: 10, MaxPrompt: 10, MaxTokens: 10}, t0)
	y, ch := b.Settle(y, ry, Usage{PromptTokens: 10, CompletionTokens: 10}, tomorrow)
	if ch.Day != "2026-03-01" || y.Spent != 0 {
		t.Errorf("cross-day settle: charge %+v, today spent %d", ch, y.Spent)
	}
	// A reservation never settled stops holding the cap after StaleReservation.
	l = l.ExpireStale(tomorrow.Add(StaleReservation))
	if len(l.InFlight) != 0 || l.Reserved() != 0 {
		t.Errorf("stale reservation kept: %+v", l.InFlight)
	}
}

func TestBudgetMinuteTokens(t *testing.T) {
	b := Budget{TokensPerMinute: 1000, DailyCap: 1 << 40, Price: price}
	var l Ledger
	var v Verdict
	l, _, v = b.Reserve(l, Call{ID: "1", Estimate: 600}, t0)
	if !v.OK {
		t.Fatal(v)
	}
	l, _, v = b.Reserve(l, Call{ID: "2", Estimate: 300}, t0.Add(10*time.Second))
	if !v.OK {
		t.Fatal(v)
	}
	// 900 used; 200 more must wait until call 1 leaves the window.
	_, _, v = b.Reserve(l, Call{ID: "3", Estimate: 200}, t0.Add(20*time.Second))
	if v.OK || v.Reason != ReasonMinute || !v.RetryAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("verdict %+v", v)
	}
	if _, _, v = b.Reserve(l, Call{ID: "3", Estimate: 200}, v.RetryAt); !v.OK {
		t.Errorf("at RetryAt the call fits: %+v", v)
	}
	// Settling replaces the estimate by the real count.
	l, _ = b.Settle(l, Reservation{ID: "2", Day: l.Day}, Usage{PromptTokens: 50, CompletionTokens: 10}, t0.Add(20*time.Second))
	if _, _, v = b.Reserve(l, Call{ID: "4", Estimate: 300}, t0.Add(21*time.Second)); !v.OK {
		t.Errorf("after settling at 60 tokens, 600+60+300 fits: %+v", v)
	}
	if _, _, v = b.Reserve(Ledger{}, Call{ID: "5", Estimate: 1001}, t0); v.Reason != ReasonTooLarge {
		t.Errorf("a call over the whole minute budget: %+v", v)
	}
}

func TestSummarizeSpend(t *testing.T) {
	cs := []Charge{
		{Day: "2026-03-01", ClusterID: "c1", BriefID: "b1", Cost: 100},
		{Day: "2026-03-01", ClusterID: "c1", BriefID: "b1", Cost: 50},
		{Day: "2026-03-01", ClusterID: "c2", BriefID: "b2", Cost: 7},
		{Day: "2026-02-28", ClusterID: "c1", BriefID: "b0", Cost: 1000},
	}
	s := SummarizeSpend(cs, "2026-03-01")
	if s.Total != 157 || s.ByCluster["c1"] != 150 || s.ByCluster["c2"] != 7 || s.ByBrief["b1"] != 150 || len(s.ByBrief) != 2 {
		t.Errorf("%+v", s)
	}
	if usd(1_234_567) != "1.2346" || usd(0) != "0.0000" {
		t.Errorf("usd %s %s", usd(1_234_567), usd(0))
	}
}

func TestTokenEstimates(t *testing.T) {
	msgs := []Message{{Role: RoleSystem, Content: strings.Repeat("abcd", 100)}, {Role: RoleUser, Content: "héllo wörld"}}
	est, upper := EstimatePrompt(msgs), MaxPromptTokens(msgs)
	if est != 3+4+100+4+EstimateTokens("héllo wörld") {
		t.Errorf("estimate %d", est)
	}
	if upper < est || upper < int64(len(msgs[0].Content)) {
		t.Errorf("upper bound %d under estimate %d", upper, est)
	}
	if EstimateTokens("") != 0 || EstimateTokens("a") != 1 || EstimateTokens("日本語のテキスト") <= EstimateTokens("abcdefgh") {
		t.Error("EstimateTokens edges")
	}
	c := CallOf("id", Request{Messages: msgs, MaxTokens: 50})
	if c.Estimate != est+50 || c.MaxPrompt != upper || c.MaxTokens != 50 {
		t.Errorf("CallOf %+v", c)
	}
}
