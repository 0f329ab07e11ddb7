package alerts

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func ranks(pairs ...int64) []Rank {
	var out []Rank
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, Rank{TrackID: pairs[i], Rank: int(pairs[i+1])})
	}
	return out
}

func TestRankMovesAndEntrants(t *testing.T) {
	prev := ranks(1, 1, 2, 2, 3, 3, 4, 11, 5, 30)
	cur := ranks(4, 1, 1, 2, 2, 3, 6, 9, 5, 12, 3, 40)
	moves := RankMoves(prev, cur, 3)
	// 4: 11→1 (10 places), 5: 30→12 (18), 3: 3→40 (37); 1 and 2 moved one place.
	want := []Move{{4, 11, 1}, {5, 30, 12}, {3, 3, 40}}
	if len(moves) != len(want) {
		t.Fatalf("moves %v, want %v", moves, want)
	}
	for i := range want {
		if moves[i] != want[i] {
			t.Fatalf("moves %v, want %v", moves, want)
		}
	}
	if m := RankMoves(prev, cur, 1); len(m) != 5 {
		t.Fatalf("places 1: %v", m)
	}
	// 4 entered the top 10 (from 11), 6 is new at 9; 1 and 2 were there.
	ent := Entrants(prev, cur)
	if len(ent) != 2 || ent[0] != (Rank{4, 1}) || ent[1] != (Rank{6, 9}) {
		t.Fatalf("entrants %v", ent)
	}
	if e := Entrants(cur, cur); len(e) != 0 {
		t.Fatalf("no change, entrants %v", e)
	}
}

func TestHistoryPredicates(t *testing.T) {
	if VersionChanged(Change{To: "2.0"}) || !VersionChanged(Change{HasFrom: true, From: "1.0", To: "2.0"}) || VersionChanged(Change{HasFrom: true, From: "2.0", To: "2.0"}) {
		t.Fatal("version")
	}
	if PriceChanged(Change{ToNum: 1}) || !PriceChanged(Change{HasFrom: true, FromNum: 0, ToNum: 0.99}) {
		t.Fatal("price")
	}
	// A drop of exactly the threshold counts; a rise or a smaller drop does not.
	if !RatingDropped(Change{HasFrom: true, FromNum: 4.5, ToNum: 4.3}, 0.2) || RatingDropped(Change{HasFrom: true, FromNum: 4.5, ToNum: 4.35}, 0.2) ||
		RatingDropped(Change{HasFrom: true, FromNum: 4.0, ToNum: 4.5}, 0.1) || RatingDropped(Change{ToNum: 1}, 0.1) {
		t.Fatal("rating")
	}
	if !Surged(20, Params{Reviews: 20}) || Surged(19, Params{Reviews: 20}) {
		t.Fatal("surge")
	}
}

func TestDecodeNamesTheField(t *testing.T) {
	for body, field := range map[string]string{
		`{"kind":"apps","target":"1"}`:          "kind",
		`{"kind":"app","target":"12x"}`:         "target",
		`{"kind":"app","target":"-3"}`:          "target",
		`{"kind":"keyword","target":"  "}`:      "target",
		`{"kind":"segment","target":"Bad Id"}`:  "target",
		`{"kind":"app","target":"1","extra":1}`: "extra",
		`{"kind":1,"target":"1"}`:               "kind",
		`[1]`:                                   "body",
		`{"kind":"app","target":"1"} {}`:        "body",
	} {
		if _, fe := DecodeWatch([]byte(body)); fe == nil || fe.Field != field {
			t.Errorf("watch %s: %v, want field %s", body, fe, field)
		}
	}
	w, fe := DecodeWatch([]byte(`{"kind":"keyword","target":"  Budget   Planner "}`))
	if fe != nil || w.Target != "budget planner" {
		t.Fatalf("keyword normalised: %+v %v", w, fe)
	}
	ok := `"channel":"webhook","url":"https://example.com/hook"`
	for body, field := range map[string]string{
		`{"type":"rank","channel":"slack","url":"https://x.com"}`:           "type",
		`{"type":"rank_change",` + ok + `}`:                                 "places",
		`{"type":"rank_change","places":0,` + ok + `}`:                      "places",
		`{"type":"rank_change","places":"3",` + ok + `}`:                    "places",
		`{"type":"rank_change","places":3,"drop":1,` + ok + `}`:             "drop",
		`{"type":"rating_drop","drop":5,` + ok + `}`:                        "drop",
		`{"type":"review_surge",` + ok + `}`:                                "reviews",
		`{"type":"review_surge","reviews":5,"window_hours":169,` + ok + `}`: "window_hours",
		`{"type":"review_surge","reviews":5,"max_stars":0,` + ok + `}`:      "max_stars",
		`{"type":"new_version","channel":"email","url":"https://x.com"}`:    "channel",
		`{"type":"new_version","channel":"slack"}`:                          "url",
		`{"type":"new_version","watch_id":0,` + ok + `}`:                    "watch_id",
		`{"type":"segment_heating","rise":0,` + ok + `}`:                    "rise",
	} {
		if _, fe := DecodeRule([]byte(body)); fe == nil || fe.Field != field {
			t.Errorf("rule %s: %v, want field %s", body, fe, field)
		}
	}
	r, fe := DecodeRule([]byte(`{"type":"review_surge","reviews":5,` + ok + `}`))
	if fe != nil || r.WindowHours != DefaultSurgeWindowHours || r.MaxStars != 5 {
		t.Fatalf("surge defaults: %+v %v", r, fe)
	}
}

func TestCheckWebhookURL(t *testing.T) {
	for _, c := range []struct {
		url           string
		allowLoopback bool
		ok            bool
	}{
		{"https://hooks.slack.com/services/T/B/x", false, true},
		{"https://example.com:8443/hook?x=1", false, true},
		{"http://example.com/hook", false, false},
		{"ftp://example.com/hook", false, false},
		{"example.com/hook", false, false},
		{"https://user:pw@example.com/", false, false},
		{"https://10.0.0.5/hook", false, false},
		{"https://172.16.3.1/hook", false, false},
		{"https://192.168.1.1/hook", false, false},
		{"https://169.254.169.254/latest", false, false},
		{"https://100.64.0.1/", false, false},
		{"https://0.0.0.0/", false, false},
		{"https://[fd00::1]/", false, false},
		{"https://[fe80::1]/", false, false},
		{"https://[::ffff:10.0.0.1]/", false, false},
		{"https://127.0.0.1/", false, false},
		{"https://[::1]/", false, false},
		{"https://localhost/", false, false},
		{"http://127.0.0.1:8080/hook", false, false},
		// Loopback under ALLOW_LOOPBACK_WEBHOOKS, over http too; private stays refused.
		{"http://127.0.0.1:8080/hook", true, true},
		{"http://[::1]:8080/hook", true, true},
		{"http://localhost:8080/hook", true, true},
		{"http://10.0.0.5/hook", true, false},
		{"http://example.com/hook", true, false},
	} {
		fe := CheckWebhookURL(c.url, c.allowLoopback)
		if (fe == nil) != c.ok || fe != nil && fe.Field != "url" {
			t.Errorf("%s (loopback %v): %v, want ok %v", c.url, c.allowLoopback, fe, c.ok)
		}
	}
}

func TestBoundHoldsAStormToNAnHour(t *testing.T) {
	var c HourCount
	keep, summary, c := Bound(c, 100, 5)
	if keep != 5 || summary || c.Sent != 5 {
		t.Fatalf("under the bound: %d %v %+v", keep, summary, c)
	}
	keep, summary, c = Bound(c, 100, MaxAlertsPerRuleHour)
	if keep != MaxAlertsPerRuleHour-5 || !summary || c.Suppressed != 5 || c.Sent != MaxAlertsPerRuleHour+1 {
		t.Fatalf("past the bound: %d %v %+v", keep, summary, c)
	}
	// The same hour again: nothing made, no second summary, counted.
	keep, summary, c = Bound(c, 100, 7)
	if keep != 0 || summary || c.Suppressed != 12 {
		t.Fatalf("held back: %d %v %+v", keep, summary, c)
	}
	// A new hour starts afresh.
	keep, summary, c = Bound(c, 101, 3)
	if keep != 3 || summary || c != (HourCount{Hour: 101, Sent: 3}) {
		t.Fatalf("next hour: %d %v %+v", keep, summary, c)
	}
}

// A receiver verifies the signature with the secret alone; a changed
// body, another secret, or an old timestamp (a replay) is refused.
func TestSignatureVerifiesAtTheReceiver(t *testing.T) {
	secret := NewSecret()
	if !strings.HasPrefix(secret, SecretPrefix) || len(secret) != len(SecretPrefix)+2*secretBytes {
		t.Fatalf("secret %q", secret)
	}
	now := time.Unix(1_800_000_000, 0)
	got := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- Verify(secret, r.Header.Get(SignatureHeader), body, now.Add(30*time.Second), SignatureTolerance)
	}))
	defer srv.Close()
	body := []byte(`{"id":1,"type":"rank_change"}`)
	req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(string(body)))
	req.Header.Set(SignatureHeader, Sign(secret, body, now))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := <-got; err != nil {
		t.Fatalf("receiver: %v", err)
	}
	h := Sign(secret, body, now)
	if !strings.HasPrefix(h, "t=1800000000,v1=") {
		t.Fatalf("header %q", h)
	}
	if Verify(secret, h, []byte(`{"id":2,"type":"rank_change"}`), now, SignatureTolerance) == nil {
		t.Fatal("a changed body verified")
	}
	if Verify(NewSecret(), h, body, now, SignatureTolerance) == nil {
		t.Fatal("another secret verified")
	}
	if Verify(secret, h, body, now.Add(SignatureTolerance+time.Second), SignatureTolerance) == nil {
		t.Fatal("a replay past the tolerance verified")
	}
	if Verify(secret, "v1=abc", body, now, SignatureTolerance) == nil {
		t.Fatal("a header without a timestamp verified")
	}
}

// Every rule type is offered once, in the API's order, with the fields
// its decoding accepts: a rule built from the offer decodes.
func TestOffersAreWhatDecodeAccepts(t *testing.T) {
	offers := Offers()
	if len(offers) != len(RuleTypes) {
		t.Fatalf("offered %d rule types, want %d", len(offers), len(RuleTypes))
	}
	for i, o := range offers {
		if o.Type != RuleTypes[i] || o.Kind != RuleKinds[o.Type] {
			t.Errorf("offer %d: %+v", i, o)
		}
		body := `{"type":"` + o.Type + `","channel":"webhook","url":"https://hooks.example.com/x"`
		for _, f := range o.Fields {
			body += `,"` + f + `":1`
		}
		if _, fe := DecodeRule([]byte(body + "}")); fe != nil {
			t.Errorf("%s with its offered fields %v: %v", o.Type, o.Fields, fe)
		}
	}
}
