package analyst

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"storecrawl/worker/llm"
	"storecrawl/worker/markets"
	"storecrawl/worker/reviews"
)

// The analyst brief: what the model is given (BriefInput), the prompt built
// from it, and the answer's schema and validation.

// Bounds of the input shown to the model: the prompt must fit a small
// model's context and a predictable token budget.
const (
	// MaxLeaders is the apps of a cluster described (the market leaders by
	// ratings).
	MaxLeaders = 5
	// MaxThemesPerLeader / MaxClusterThemes cap the complaint themes shown.
	MaxThemesPerLeader = 3
	MaxClusterThemes   = 5
	// MaxQuotesPerTheme and MaxQuoteRunes bound the example reviews quoted.
	MaxQuotesPerTheme = 2
	MaxQuoteRunes     = 240
	// MaxKeywords caps the cluster's keywords shown.
	MaxKeywords = 12
	// maxNameRunes caps names and phrases shown.
	maxNameRunes = 120
	// BriefMaxTokens is the completion bound of a brief: a full brief is
	// ~400-600 tokens; 1000 leaves room and bounds the worst-case cost.
	BriefMaxTokens = 1000
	// PromptVersion names the prompt's wording; stored with each brief.
	PromptVersion = "brief-v2"
)

// Bounds of the answer (what the validator enforces).
const (
	maxHeadline     = 140
	maxParagraph    = 1200
	maxListItem     = 300
	maxWeaknesses   = 5
	maxRisks        = 5
	minRisks        = 1
	maxAnswerBytes  = 32 << 10
	maxRetryEcho    = 4000 // runes of an invalid answer echoed into the retry
	maxErrorsListed = 8
)

// Quote is an example review shown for a theme.
type Quote struct {
	ReviewID string `json:"review_id"`
	Rating   int    `json:"rating"`
	Text     string `json:"text"`
}

// ThemeInput is one complaint theme as shown to the model.
type ThemeInput struct {
	Phrase string  `json:"phrase"`
	Share  float64 `json:"share"` // of the reviews read
	Quotes []Quote `json:"quotes,omitempty"`
}

// LeaderInput is one leading app of the cluster.
type LeaderInput struct {
	AppID       int64   `json:"app_id"`
	Name        string  `json:"name"`
	Developer   string  `json:"developer"`
	Rating      float64 `json:"rating"`
	RatingCount int64   `json:"rating_count"`
	Price       float64 `json:"price"`
	// Competitiveness is the app's competitiveness_score as GET
	// /v1/apps/{id} serves it (0–100); null until the app is enriched.
	Competitiveness *float64     `json:"competitiveness_score"`
	Reviews         int          `json:"reviews_read"`
	Themes          []ThemeInput `json:"complaint_themes,omitempty"`
	// ThemesMissingReason says why the app has no complaint themes.
	ThemesMissingReason string `json:"themes_missing_reason,omitempty"`
}

// BriefInput is everything the analyst sees for one cluster. It is stored
// with the brief, so a brief can be reproduced and audited.
type BriefInput struct {
	ClusterID string   `json:"cluster_id"`
	Label     string   `json:"label"`
	Keywords  []string `json:"keywords"`
	// Market is the cluster's scores exactly as GET /v1/opportunities
	// serves them (markets.ReadScores): same values, same scales.
	Market markets.Scores `json:"market"`
	// LeadersCompetitiveness is the mean competitiveness_score (0–100) of
	// the leaders scored so far (CompetitivenessScored of them); null when
	// none is: unknown, not 0.
	LeadersCompetitiveness *float64      `json:"leaders_competitiveness"`
	CompetitivenessScored  int           `json:"leaders_competitiveness_scored"`
	Leaders                []LeaderInput `json:"leaders"`
	ClusterThemes          []ThemeInput  `json:"cluster_complaint_themes,omitempty"`
	// ThemesMissingReason says why the cluster has no complaint themes (its
	// reviews were never fetched, none was stored, or none recurs).
	ThemesMissingReason string `json:"themes_missing_reason,omitempty"`
}

// Bounded returns in cut to the prompt's bounds, leaders in the order given.
func (in BriefInput) Bounded() BriefInput {
	in.Label = cut(in.Label, maxNameRunes)
	in.Keywords = slices.Clone(in.Keywords[:min(len(in.Keywords), MaxKeywords)])
	for i := range in.Keywords {
		in.Keywords[i] = cut(in.Keywords[i], maxNameRunes)
	}
	leaders := make([]LeaderInput, 0, min(len(in.Leaders), MaxLeaders))
	for _, l := range in.Leaders[:min(len(in.Leaders), MaxLeaders)] {
		l.Name, l.Developer = cut(l.Name, maxNameRunes), cut(l.Developer, maxNameRunes)
		l.Themes = boundThemes(l.Themes, MaxThemesPerLeader)
		leaders = append(leaders, l)
	}
	in.Leaders = leaders
	in.ClusterThemes = boundThemes(in.ClusterThemes, MaxClusterThemes)
	return in
}

func boundThemes(ts []ThemeInput, n int) []ThemeInput {
	out := make([]ThemeInput, 0, min(len(ts), n))
	for _, t := range ts[:min(len(ts), n)] {
		t.Phrase = cut(t.Phrase, maxNameRunes)
		qs := make([]Quote, 0, min(len(t.Quotes), MaxQuotesPerTheme))
		for _, q := range t.Quotes[:min(len(t.Quotes), MaxQuotesPerTheme)] {
			q.Text = cut(strings.Join(strings.Fields(q.Text), " "), MaxQuoteRunes)
			qs = append(qs, q)
		}
		t.Quotes = qs
		out = append(out, t)
	}
	return out
}

func cut(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// ThemeInputs shows complaint themes to the model, quoting up to
// MaxQuotesPerTheme of each theme's example reviews found in byID.
func ThemeInputs(themes []reviews.Theme, byID map[string]reviews.Review) []ThemeInput {
	out := make([]ThemeInput, 0, len(themes))
	for _, t := range themes {
		ti := ThemeInput{Phrase: t.Phrase, Share: math.Round(t.Share*1000) / 1000}
		for _, id := range t.ExampleIDs {
			if r, ok := byID[id]; ok && len(ti.Quotes) < MaxQuotesPerTheme {
				text := r.Title
				if r.Body != "" {
					text += ": " + r.Body
				}
				ti.Quotes = append(ti.Quotes, Quote{ReviewID: id, Rating: r.Rating, Text: text})
			}
		}
		out = append(out, ti)
	}
	return out
}

// BriefSchema is the answer's JSON Schema, shown to the model and mirrored
// by ValidateBrief.
const BriefSchema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["headline", "market", "leaders", "unmet_need", "product_concept", "risks", "confidence"],
  "properties": {
    "headline": {"type": "string", "minLength": 1, "maxLength": 140},
    "market": {"type": "string", "minLength": 1, "maxLength": 1200},
    "leaders": {
      "type": "array", "minItems": 1, "maxItems": 5,
      "items": {
        "type": "object",
        "additionalProperties": false,
        "required": ["app_id", "name", "weaknesses"],
        "properties": {
          "app_id": {"type": "integer", "description": "one of the input leaders' app_id"},
          "name": {"type": "string", "minLength": 1, "maxLength": 120},
          "weaknesses": {"type": "array", "minItems": 1, "maxItems": 5, "items": {"type": "string", "minLength": 1, "maxLength": 300}}
        }
      }
    },
    "unmet_need": {"type": "string", "minLength": 1, "maxLength": 1200},
    "product_concept": {"type": "string", "minLength": 1, "maxLength": 1200},
    "risks": {"type": "array", "minItems": 1, "maxItems": 5, "items": {"type": "string", "minLength": 1, "maxLength": 300}},
    "confidence": {"type": "string", "enum": ["low", "medium", "high"]}
  }
}`

// Brief is a validated answer.
type Brief struct {
	Headline       string        `json:"headline"`
	Market         string        `json:"market"`
	Leaders        []BriefLeader `json:"leaders"`
	UnmetNeed      string        `json:"unmet_need"`
	ProductConcept string        `json:"product_concept"`
	Risks          []string      `json:"risks"`
	Confidence     string        `json:"confidence"`
}

// BriefLeader is one leader and its weaknesses.
type BriefLeader struct {
	AppID      int64    `json:"app_id"`
	Name       string   `json:"name"`
	Weaknesses []string `json:"weaknesses"`
}

const systemPrompt = `You are a product-market analyst for the App Store. You are given one market cluster as JSON:
- keywords;
- market: its scores exactly as the storecrawl API serves them, on the API's scales: opportunity_score 0-100 (higher is a better opportunity; null = not scored yet), demand = log10(1 + the members' total ratings) (0 to about 7), fragmentation 0-1 (1 - hhi; high = demand spread over many apps), hhi 0-1 (high = one app holds the ratings), quality_gap 0-1 (how far the members' weighted rating falls under 4.5), app_count, total_ratings, avg_rating (1-5);
- leaders_competitiveness: 0-100, the mean competitiveness_score of the leaders scored so far (leaders_competitiveness_scored of them); higher is harder to compete with. null means no leader is scored yet: unknown, not easy;
- leaders: the leading apps, each with its competitiveness_score (0-100, null = not scored yet) and the complaint themes found in its recent reviews (each with its share of reviews and example quotes);
- cluster_complaint_themes: the cluster's overall complaint themes.
When you quote a score, quote it as given with its scale (e.g. "opportunity 33.5/100"); never rescale it.
Where themes_missing_reason is given, there are no complaint themes for that app or cluster, for that reason: say so plainly, do not invent complaints, and lower the confidence.

Write a brief for a team deciding whether to build an app for this market:
- headline: one line, the opportunity in plain words;
- market: who the users are and what the market looks like, from the data;
- leaders: for each leading app you discuss, its app_id exactly as given and its weaknesses, grounded in its complaint themes (or "not known from reviews" and why, when it has none);
- unmet_need: what users want that the leaders fail to give;
- product_concept: the app you would build to meet that need;
- risks: what could make this fail;
- confidence: low, medium or high, lower when reviews are few or themes weak or missing.

Use only the data given. Answer with one JSON object and nothing else, matching this JSON Schema:
`

// BuildBriefPrompt returns the messages for a cluster's brief and the input
// JSON shown (to store with the brief). The same input always gives the same
// bytes.
func BuildBriefPrompt(in BriefInput) ([]llm.Message, []byte, error) {
	in = in.Bounded()
	if len(in.Leaders) == 0 {
		return nil, nil, errors.New("llm: a brief needs at least one leader app")
	}
	data, err := json.MarshalIndent(in, "", " ")
	if err != nil {
		return nil, nil, err
	}
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: systemPrompt + BriefSchema},
		{Role: llm.RoleUser, Content: "Market cluster:\n" + string(data)},
	}
	return msgs, data, nil
}

// ValidationError lists what is wrong with an answer, by JSON path.
type ValidationError struct {
	Problems []string
}

func (e *ValidationError) Error() string {
	p := e.Problems
	more := ""
	if len(p) > maxErrorsListed {
		p, more = p[:maxErrorsListed], fmt.Sprintf("; and %d more", len(e.Problems)-maxErrorsListed)
	}
	return "invalid answer: " + strings.Join(p, "; ") + more
}

// ValidateBrief checks an answer against BriefSchema and against the input
// (a leader's app_id must be one of the input's leaders). One surrounding
// Markdown code fence is tolerated; anything else around the object is not.
func ValidateBrief(answer string, in BriefInput) (Brief, error) {
	if len(answer) > maxAnswerBytes {
		return Brief{}, &ValidationError{Problems: []string{fmt.Sprintf("answer is %d bytes, over %d", len(answer), maxAnswerBytes)}}
	}
	text := strings.TrimSpace(answer)
	text = stripFence(text)
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.DisallowUnknownFields()
	var b Brief
	if err := dec.Decode(&b); err != nil {
		return Brief{}, &ValidationError{Problems: []string{"not a JSON object of the schema: " + err.Error()}}
	}
	if dec.More() {
		return Brief{}, &ValidationError{Problems: []string{"text after the JSON object"}}
	}
	// Required keys must be present, not just zero: decode again loosely.
	var keys map[string]json.RawMessage
	_ = json.Unmarshal([]byte(text), &keys)
	var p []string
	for _, k := range []string{"headline", "market", "leaders", "unmet_need", "product_concept", "risks", "confidence"} {
		if _, ok := keys[k]; !ok {
			p = append(p, k+": required")
		}
	}
	p = append(p, str("headline", b.Headline, maxHeadline)...)
	p = append(p, str("market", b.Market, maxParagraph)...)
	p = append(p, str("unmet_need", b.UnmetNeed, maxParagraph)...)
	p = append(p, str("product_concept", b.ProductConcept, maxParagraph)...)
	p = append(p, list("risks", b.Risks, minRisks, maxRisks)...)
	if !slices.Contains([]string{"low", "medium", "high"}, b.Confidence) {
		p = append(p, fmt.Sprintf("confidence: %q is not one of low, medium, high", b.Confidence))
	}
	known := map[int64]bool{}
	for _, l := range in.Bounded().Leaders {
		known[l.AppID] = true
	}
	if len(b.Leaders) == 0 || len(b.Leaders) > MaxLeaders {
		p = append(p, fmt.Sprintf("leaders: %d items, want 1 to %d", len(b.Leaders), MaxLeaders))
	}
	seen := map[int64]bool{}
	for i, l := range b.Leaders {
		path := fmt.Sprintf("leaders[%d]", i)
		if !known[l.AppID] {
			p = append(p, fmt.Sprintf("%s.app_id: %d is not one of the input's leaders", path, l.AppID))
		} else if seen[l.AppID] {
			p = append(p, fmt.Sprintf("%s.app_id: %d is listed twice", path, l.AppID))
		}
		seen[l.AppID] = true
		p = append(p, str(path+".name", l.Name, maxNameRunes)...)
		p = append(p, list(path+".weaknesses", l.Weaknesses, 1, maxWeaknesses)...)
	}
	if len(p) > 0 {
		return Brief{}, &ValidationError{Problems: p}
	}
	return b, nil
}

func stripFence(s string) string {
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return s
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "```"), "```")
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		if tag := strings.TrimSpace(s[:i]); tag == "json" || tag == "" {
			s = s[i+1:]
		}
	}
	return strings.TrimSpace(s)
}

func str(path, v string, maxRunes int) []string {
	switch n := utf8.RuneCountInString(strings.TrimSpace(v)); {
	case n == 0:
		return []string{path + ": must not be empty"}
	case n > maxRunes:
		return []string{fmt.Sprintf("%s: %d characters, over %d", path, n, maxRunes)}
	}
	return nil
}

func list(path string, xs []string, lo, hi int) []string {
	if len(xs) < lo || len(xs) > hi {
		return []string{fmt.Sprintf("%s: %d items, want %d to %d", path, len(xs), lo, hi)}
	}
	var p []string
	for i, x := range xs {
		p = append(p, str(fmt.Sprintf("%s[%d]", path, i), x, maxListItem)...)
	}
	return p
}

// Action is what to do after an answer.
type Action string

const (
	Accept Action = "accept" // the answer is valid: store the brief
	Retry  Action = "retry"  // ask once more, with the validation error
	Fail   Action = "fail"   // record the brief as failed
)

// MaxAttempts is the attempts per brief: the first answer, and one retry
// told what was wrong.
const MaxAttempts = 2

// Step is NextStep's decision.
type Step struct {
	Action Action
	// Messages is the retry's prompt (Retry only): the original prompt, the
	// invalid answer, and the validation error.
	Messages []llm.Message
	// Reason is the validation error (Retry and Fail).
	Reason string
}

// NextStep decides what follows attempt (1-based) whose answer failed
// validation with verr (nil when it passed): accept, retry once with the
// error, or fail.
func NextStep(attempt int, prompt []llm.Message, answer string, verr error) Step {
	if verr == nil {
		return Step{Action: Accept}
	}
	if attempt >= MaxAttempts {
		return Step{Action: Fail, Reason: verr.Error()}
	}
	msgs := append(slices.Clone(prompt),
		llm.Message{Role: llm.RoleAssistant, Content: cut(answer, maxRetryEcho)},
		llm.Message{Role: llm.RoleUser, Content: "That answer is not valid: " + verr.Error() +
			"\nReply again with only the corrected JSON object matching the schema."})
	return Step{Action: Retry, Messages: msgs, Reason: verr.Error()}
}
