package analyst

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"storecrawl/worker/llm"
	"storecrawl/worker/markets"
	"storecrawl/worker/reviews"
)

// input builds a brief input from the real Instagram capture, the way the
// analyst will: parse, score, group themes, quote examples.
func input(t *testing.T) BriefInput {
	t.Helper()
	body, err := os.ReadFile("../reviews/testdata/us_389801252_p1_2025.json")
	if err != nil {
		t.Fatal(err)
	}
	page, err := reviews.Parse(body, 389801252, "us")
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]reviews.Review{}
	for _, r := range page.Reviews {
		byID[r.ID] = r
	}
	themes := reviews.ComplaintThemes(reviews.ScoreAll(page.Reviews), reviews.ThemeOptions{Exclude: []string{"Instagram"}})
	return BriefInput{
		ClusterID: "photo sharing", Label: "photo sharing", Keywords: []string{"photo", "social", "stories"},
		Market:                 markets.Scores{ClusterID: "photo sharing", OpportunityScore: ptr(61.2), Demand: ptr(7.5), Fragmentation: ptr(0.3), AppCount: 12},
		LeadersCompetitiveness: ptr(70.0), CompetitivenessScored: 1,
		Leaders: []LeaderInput{
			{AppID: 389801252, Name: "Instagram", Developer: "Instagram, Inc.", Rating: 4.7, RatingCount: 28000000, Competitiveness: ptr(70.0), Reviews: len(page.Reviews), Themes: ThemeInputs(themes, byID)},
			{AppID: 447188370, Name: "Snapchat", Developer: "Snap, Inc.", Rating: 4.6, RatingCount: 7000000},
		},
		ClusterThemes: ThemeInputs(themes, byID),
	}
}

func ptr(f float64) *float64 { return &f }

func validBrief() Brief {
	return Brief{
		Headline: "A calmer photo app for people locked out of the giants",
		Market:   "Photo sharing is led by two apps with tens of millions of ratings.",
		Leaders: []BriefLeader{
			{AppID: 389801252, Name: "Instagram", Weaknesses: []string{"Accounts suspended without a reason", "Logging in fails"}},
		},
		UnmetNeed:      "Reliable access and a human appeal when an account is suspended.",
		ProductConcept: "A small-circle photo app with transparent moderation.",
		Risks:          []string{"Network effects of the leaders"},
		Confidence:     "medium",
	}
}

func TestBuildBriefPrompt(t *testing.T) {
	in := input(t)
	msgs, data, err := BuildBriefPrompt(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Role != llm.RoleSystem || msgs[1].Role != llm.RoleUser {
		t.Fatalf("messages %+v", msgs)
	}
	if !strings.Contains(msgs[0].Content, BriefSchema) || !strings.Contains(msgs[1].Content, string(data)) {
		t.Error("prompt lacks the schema or the input")
	}
	// The input shown is the bounded input, complete enough to audit.
	var shown BriefInput
	if err := json.Unmarshal(data, &shown); err != nil {
		t.Fatal(err)
	}
	if shown.ClusterID != "photo sharing" || len(shown.Leaders) != 2 || shown.Leaders[0].AppID != 389801252 || len(shown.Leaders[0].Themes) == 0 {
		t.Errorf("shown input %+v", shown)
	}
	for _, th := range shown.Leaders[0].Themes {
		if len(th.Quotes) == 0 || len(th.Quotes) > MaxQuotesPerTheme {
			t.Errorf("theme %q quotes %d", th.Phrase, len(th.Quotes))
		}
		for _, q := range th.Quotes {
			if len([]rune(q.Text)) > MaxQuoteRunes || strings.Contains(q.Text, "\n") {
				t.Errorf("quote not bounded: %q", q.Text)
			}
		}
	}
	// Deterministic: same input, same bytes and hash.
	msgs2, data2, _ := BuildBriefPrompt(input(t))
	if string(data) != string(data2) || llm.PromptHash(msgs) != llm.PromptHash(msgs2) {
		t.Error("the same input built a different prompt")
	}
	in.Market.OpportunityScore = ptr(61.3)
	msgs3, _, _ := BuildBriefPrompt(in)
	if llm.PromptHash(msgs3) == llm.PromptHash(msgs) {
		t.Error("a different input has the same prompt hash")
	}
	// Bounds: many leaders, themes and long text are cut.
	big := input(t)
	for i := range 20 {
		big.Leaders = append(big.Leaders, LeaderInput{AppID: int64(i), Name: strings.Repeat("n", 500)})
	}
	big.Keywords = make([]string, 100)
	_, bd, _ := BuildBriefPrompt(big)
	_ = json.Unmarshal(bd, &shown)
	if len(shown.Leaders) != MaxLeaders || len(shown.Keywords) != MaxKeywords {
		t.Errorf("bounds: %d leaders, %d keywords", len(shown.Leaders), len(shown.Keywords))
	}
	if est := llm.EstimatePrompt(msgs); est > 4000 {
		t.Errorf("a brief prompt of %d tokens is over the size the budget assumes", est)
	}
	if _, _, err := BuildBriefPrompt(BriefInput{ClusterID: "x"}); err == nil {
		t.Error("a cluster without leaders built a prompt")
	}
}

func TestValidateBrief(t *testing.T) {
	in := input(t)
	good, _ := json.Marshal(validBrief())
	b, err := ValidateBrief(string(good), in)
	if err != nil {
		t.Fatalf("valid brief refused: %v", err)
	}
	if b.Leaders[0].AppID != 389801252 || b.Confidence != "medium" {
		t.Errorf("%+v", b)
	}
	if _, err := ValidateBrief("```json\n"+string(good)+"\n```", in); err != nil {
		t.Errorf("fenced answer: %v", err)
	}
	mutate := func(f func(m map[string]any)) string {
		var m map[string]any
		_ = json.Unmarshal(good, &m)
		f(m)
		out, _ := json.Marshal(m)
		return string(out)
	}
	tests := []struct {
		name, answer, want string
	}{
		{"prose", "Here is the brief: " + string(good), "not a JSON object"},
		{"trailing text", string(good) + " hope this helps", "after the JSON"},
		{"missing key", mutate(func(m map[string]any) { delete(m, "risks") }), "risks: required"},
		{"unknown key", mutate(func(m map[string]any) { m["tam_usd"] = 1e9 }), "unknown field"},
		{"bad confidence", mutate(func(m map[string]any) { m["confidence"] = "very high" }), "confidence"},
		{"empty headline", mutate(func(m map[string]any) { m["headline"] = "  " }), "headline: must not be empty"},
		{"long headline", mutate(func(m map[string]any) { m["headline"] = strings.Repeat("h", 141) }), "headline: 141 characters"},
		{"invented app", mutate(func(m map[string]any) {
			m["leaders"] = []any{map[string]any{"app_id": 1, "name": "X", "weaknesses": []string{"w"}}}
		}), "leaders[0].app_id: 1 is not one of the input's leaders"},
		{"no weaknesses", mutate(func(m map[string]any) {
			m["leaders"] = []any{map[string]any{"app_id": 389801252, "name": "Instagram", "weaknesses": []string{}}}
		}), "leaders[0].weaknesses: 0 items"},
		{"duplicate leader", mutate(func(m map[string]any) {
			l := map[string]any{"app_id": 447188370, "name": "Snapchat", "weaknesses": []string{"w"}}
			m["leaders"] = []any{l, l}
		}), "listed twice"},
		{"too many risks", mutate(func(m map[string]any) { m["risks"] = []string{"a", "b", "c", "d", "e", "f"} }), "risks: 6 items"},
		{"wrong type", mutate(func(m map[string]any) { m["risks"] = "many" }), "not a JSON object"},
		{"huge", strings.Repeat(" ", maxAnswerBytes+1) + "x", "bytes, over"},
	}
	for _, tc := range tests {
		_, err := ValidateBrief(tc.answer, in)
		var ve *ValidationError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a validation error with %q", tc.name, err, tc.want)
		}
	}
}

// The schema shown to the model and the validator agree on the required keys.
func TestSchemaMatchesValidator(t *testing.T) {
	var s struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal([]byte(BriefSchema), &s); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	good, _ := json.Marshal(validBrief())
	_ = json.Unmarshal(good, &m)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	req := slices.Sorted(slices.Values(s.Required))
	if !slices.Equal(keys, req) || len(s.Properties) != len(keys) {
		t.Errorf("schema requires %v, Brief has %v", req, keys)
	}
}

func TestNextStep(t *testing.T) {
	prompt := []llm.Message{{Role: llm.RoleSystem, Content: "s"}, {Role: llm.RoleUser, Content: "u"}}
	verr := &ValidationError{Problems: []string{"risks: required"}}
	if s := NextStep(1, prompt, "{}", nil); s.Action != Accept {
		t.Errorf("valid first answer: %+v", s)
	}
	s := NextStep(1, prompt, `{"headline":"x"}`, verr)
	if s.Action != Retry || len(s.Messages) != 4 || s.Messages[2].Role != llm.RoleAssistant || s.Messages[2].Content != `{"headline":"x"}` ||
		s.Messages[3].Role != llm.RoleUser || !strings.Contains(s.Messages[3].Content, "risks: required") {
		t.Errorf("retry: %+v", s)
	}
	if len(prompt) != 2 {
		t.Error("NextStep changed the caller's prompt")
	}
	if s := NextStep(2, s.Messages, "still bad", verr); s.Action != Fail || !strings.Contains(s.Reason, "risks: required") {
		t.Errorf("second invalid answer: %+v", s)
	}
	if s := NextStep(2, prompt, "{}", nil); s.Action != Accept {
		t.Errorf("valid retry: %+v", s)
	}
	long := strings.Repeat("x", 10*maxRetryEcho)
	if s := NextStep(1, prompt, long, verr); len([]rune(s.Messages[2].Content)) > maxRetryEcho {
		t.Error("an invalid answer is echoed unbounded")
	}
}
