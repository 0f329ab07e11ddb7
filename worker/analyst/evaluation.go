package analyst

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"storecrawl/worker/llm"
)

// A segment evaluation: what a founder reads before entering a market
// segment. Five steps, each stored with its exact input:
//  1. reference_apps: the segment's leaders and fastest risers, read from
//     D1 (segments.apps and app_registry's rating velocity): no call;
//  2. complaint_themes: the reviews' complaint themes over those apps, with
//     example reviews (worker/reviews' theme code): no call;
//  3. methods: how well ASO, paid search, content, community and
//     partnerships fit, each scored 0–100 with a reason (one LLM call);
//  4. critic: a second call that challenges step 3's scores;
//  5. synthesis: the opportunity, the app to build, the first users to
//     reach (one LLM call).

// Step numbers and names.
const (
	StepReferenceApps = 1
	StepThemes        = 2
	StepMethods       = 3
	StepCritic        = 4
	StepSynthesis     = 5
	// EvalSteps is the number of steps of an evaluation.
	EvalSteps = 5
)

// StepNames names the steps (segment_evaluation_steps.name), by number.
var StepNames = [EvalSteps + 1]string{"", "reference_apps", "complaint_themes", "methods", "critic", "synthesis"}

// Methods are the marketing methods scored, in order.
var Methods = []string{"aso", "paid_search", "content", "community", "partnerships"}

// Bounds of an evaluation's input and answers.
const (
	// EvalLeaders / EvalRisers: the reference apps shown (the segment's
	// leaders by share, then its fastest risers by 7-day rating velocity
	// among its other apps).
	EvalLeaders = 5
	EvalRisers  = 3
	// EvalThemes is the segment's complaint themes shown.
	EvalThemes = 5
	// EvalReviewsPerApp is the newest reviews of each reference app read
	// for the themes (app_reviews_by_app): at most (EvalLeaders +
	// EvalRisers) × EvalReviewsPerApp rows.
	EvalReviewsPerApp = 100
	// EvalKeywords is the segment's keywords shown.
	EvalKeywords = 12
	// Completion bounds of the LLM steps: they bound each call's worst case.
	MethodsMaxTokens   = 800
	CriticMaxTokens    = 600
	SynthesisMaxTokens = 600
	// EvalPromptVersion names the steps' wording; stored with each evaluation.
	EvalPromptVersion = "segment-eval-v1"
	maxReason         = 300
	maxChallenges     = 5
	maxTopMethods     = 3
)

// EvalMarker starts the user message of an evaluation step's prompt; the
// step's name, a newline and its input JSON follow.
const EvalMarker = "Segment evaluation step: "

// RefApp is one reference app.
type RefApp struct {
	AppID       int64    `json:"app_id"`
	Name        string   `json:"name"`
	Developer   string   `json:"developer"`
	Role        string   `json:"role"` // "leader" | "riser"
	Share       float64  `json:"share"`
	Rating      float64  `json:"rating"`
	RatingCount int64    `json:"rating_count"`
	Velocity7d  *float64 `json:"rating_velocity_7d"`
	Velocity30d *float64 `json:"rating_velocity_30d"`
}

// SegmentFacts is the segment as the evaluation sees it: its name,
// keywords, scores and trend as GET /v1/segments/{id} serves them.
type SegmentFacts struct {
	SegmentID    int64           `json:"segment_id"`
	Name         string          `json:"name"`
	Keywords     []string        `json:"keywords"`
	Scores       json.RawMessage `json:"scores"`
	Trend        string          `json:"trend"`
	TrendFigures json.RawMessage `json:"trend_figures"`
}

// ThemesOutput is step 2's output.
type ThemesOutput struct {
	ReviewsRead         int          `json:"reviews_read"`
	Themes              []ThemeInput `json:"complaint_themes"`
	ThemesMissingReason string       `json:"themes_missing_reason,omitempty"`
}

// MethodFit is one marketing method's fit.
type MethodFit struct {
	Method string `json:"method"`
	Score  int    `json:"score"`
	Reason string `json:"reason"`
}

// MethodsOutput is step 3's answer.
type MethodsOutput struct {
	Methods []MethodFit `json:"methods"`
}

// Challenge is one of the critic's objections.
type Challenge struct {
	Method       string `json:"method"`
	Objection    string `json:"objection"`
	RevisedScore int    `json:"revised_score"`
}

// CriticOutput is step 4's answer.
type CriticOutput struct {
	Verdict    string      `json:"verdict"` // "holds" | "revise"
	Challenges []Challenge `json:"challenges"`
	Summary    string      `json:"summary"`
}

// SynthesisOutput is step 5's answer.
type SynthesisOutput struct {
	Opportunity string   `json:"opportunity"`
	AppToBuild  string   `json:"app_to_build"`
	FirstUsers  string   `json:"first_users"`
	TopMethods  []string `json:"top_methods"`
	Confidence  string   `json:"confidence"`
}

// EvalInput is what an LLM step is shown: the segment and the outputs of
// the steps before it (Methods from step 4 on, Critic at step 5).
type EvalInput struct {
	Segment       SegmentFacts   `json:"segment"`
	ReferenceApps []RefApp       `json:"reference_apps"`
	Complaints    ThemesOutput   `json:"complaints"`
	Methods       *MethodsOutput `json:"methods,omitempty"`
	Critic        *CriticOutput  `json:"critic,omitempty"`
}

const evalSystem = `You are a go-to-market analyst for the App Store. You are given one market segment as JSON:
- segment: its name, keywords, scores (opportunity 0-100, higher is better; demand = log10(1 + total ratings); fragmentation 0-1, high = demand spread over many apps; quality_gap 0-1; competitiveness 0-100, higher is harder; leaders_velocity_7d/30d = the leaders' new ratings a day) and trend (heating, steady or cooling, with its figures);
- reference_apps: its leaders (by share of ratings) and fastest risers (by rating_velocity_7d, new ratings a day);
- complaints: the complaint themes of those apps' recent reviews, each with its share of reviews and example quotes, or themes_missing_reason.
Use only the data given; quote figures as given with their scales. Answer with one JSON object and nothing else, matching this JSON Schema:
`

// The steps' instructions and schemas.
const (
	methodsTask   = `Score how well each marketing method fits this segment for a new app, 0-100, with a one-sentence reason grounded in the data: aso (App Store search optimisation), paid_search (Apple Search Ads and paid acquisition), content (articles, video, SEO), community (forums, social groups, user communities), partnerships (integrations, bundles, distribution deals).`
	methodsSchema = `{"type": "object", "additionalProperties": false, "required": ["methods"], "properties": {"methods": {"type": "array", "minItems": 5, "maxItems": 5, "items": {"type": "object", "additionalProperties": false, "required": ["method", "score", "reason"], "properties": {"method": {"enum": ["aso", "paid_search", "content", "community", "partnerships"]}, "score": {"type": "integer", "minimum": 0, "maximum": 100}, "reason": {"type": "string", "minLength": 1, "maxLength": 300}}}}}}`
	criticTask    = `You are the critic. "methods" is another analyst's scoring of the marketing methods. Challenge it: for each score the data does not support (at most 5), name the method, your objection grounded in the data, and the score you would give. verdict is "holds" when no score moves by more than 10, else "revise". summary: one or two sentences.`
	criticSchema  = `{"type": "object", "additionalProperties": false, "required": ["verdict", "challenges", "summary"], "properties": {"verdict": {"enum": ["holds", "revise"]}, "challenges": {"type": "array", "maxItems": 5, "items": {"type": "object", "additionalProperties": false, "required": ["method", "objection", "revised_score"], "properties": {"method": {"enum": ["aso", "paid_search", "content", "community", "partnerships"]}, "objection": {"type": "string", "minLength": 1, "maxLength": 300}, "revised_score": {"type": "integer", "minimum": 0, "maximum": 100}}}}, "summary": {"type": "string", "minLength": 1, "maxLength": 300}}}`
	synthesisTask = `Write the synthesis a founder acts on, weighing the methods' scores against the critic: opportunity (the gap in this market, in one or two sentences), app_to_build (the app you would build to fill it), first_users (who to reach first and where), top_methods (the 1 to 3 methods to start with, best first), confidence (low, medium or high; lower when reviews are few or themes missing).`
	synthSchema   = `{"type": "object", "additionalProperties": false, "required": ["opportunity", "app_to_build", "first_users", "top_methods", "confidence"], "properties": {"opportunity": {"type": "string", "minLength": 1, "maxLength": 300}, "app_to_build": {"type": "string", "minLength": 1, "maxLength": 300}, "first_users": {"type": "string", "minLength": 1, "maxLength": 300}, "top_methods": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"enum": ["aso", "paid_search", "content", "community", "partnerships"]}}, "confidence": {"enum": ["low", "medium", "high"]}}}`
)

// StepMaxTokens is each LLM step's completion bound.
func StepMaxTokens(step int) int {
	switch step {
	case StepMethods:
		return MethodsMaxTokens
	case StepCritic:
		return CriticMaxTokens
	}
	return SynthesisMaxTokens
}

// BuildStepPrompt returns the messages of an LLM step (3, 4 or 5) and the
// input JSON shown (stored with the step). The same input gives the same
// bytes.
func BuildStepPrompt(step int, in EvalInput) ([]llm.Message, []byte, error) {
	var task, schema string
	switch step {
	case StepMethods:
		task, schema, in.Methods, in.Critic = methodsTask, methodsSchema, nil, nil
	case StepCritic:
		if in.Methods == nil {
			return nil, nil, errors.New("analyst: the critic step needs the methods' answer")
		}
		task, schema, in.Critic = criticTask, criticSchema, nil
	case StepSynthesis:
		if in.Methods == nil || in.Critic == nil {
			return nil, nil, errors.New("analyst: the synthesis step needs the methods' and the critic's answers")
		}
		task, schema = synthesisTask, synthSchema
	default:
		return nil, nil, fmt.Errorf("analyst: step %d makes no call", step)
	}
	data, err := json.MarshalIndent(in, "", " ")
	if err != nil {
		return nil, nil, err
	}
	return []llm.Message{
		{Role: llm.RoleSystem, Content: evalSystem + schema + "\n\n" + task},
		{Role: llm.RoleUser, Content: EvalMarker + StepNames[step] + "\n" + string(data)},
	}, data, nil
}

// ParseStepPrompt finds an evaluation step's name and input in a
// conversation (what the simulator answers from).
func ParseStepPrompt(msgs []llm.Message) (step int, in EvalInput, ok bool) {
	for _, m := range msgs {
		rest, found := strings.CutPrefix(m.Content, EvalMarker)
		if m.Role != llm.RoleUser || !found {
			continue
		}
		name, data, _ := strings.Cut(rest, "\n")
		n := slices.Index(StepNames[:], name)
		if n < StepMethods || json.Unmarshal([]byte(data), &in) != nil {
			continue
		}
		return n, in, true
	}
	return 0, EvalInput{}, false
}

// decodeStrict decodes one JSON object (one Markdown fence tolerated),
// refusing unknown fields and text after it.
func decodeStrict(answer string, v any) error {
	if len(answer) > maxAnswerBytes {
		return fmt.Errorf("answer is %d bytes, over %d", len(answer), maxAnswerBytes)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(stripFence(strings.TrimSpace(answer)))))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errors.New("not a JSON object of the schema: " + err.Error())
	}
	if dec.More() {
		return errors.New("text after the JSON object")
	}
	return nil
}

func score100(path string, v int) []string {
	if v < 0 || v > 100 {
		return []string{fmt.Sprintf("%s: %d is not 0 to 100", path, v)}
	}
	return nil
}

func method(path, m string) []string {
	if !slices.Contains(Methods, m) {
		return []string{fmt.Sprintf("%s: %q is not one of %v", path, m, Methods)}
	}
	return nil
}

// ValidateStep checks an LLM step's answer against its schema and returns
// its output (compact JSON) to store.
func ValidateStep(step int, answer string) (json.RawMessage, error) {
	var p []string
	var out any
	switch step {
	case StepMethods:
		var m MethodsOutput
		if err := decodeStrict(answer, &m); err != nil {
			return nil, &ValidationError{Problems: []string{err.Error()}}
		}
		seen := map[string]bool{}
		for i, f := range m.Methods {
			path := fmt.Sprintf("methods[%d]", i)
			p = append(p, method(path+".method", f.Method)...)
			if seen[f.Method] {
				p = append(p, fmt.Sprintf("%s.method: %q is listed twice", path, f.Method))
			}
			seen[f.Method] = true
			p = append(p, score100(path+".score", f.Score)...)
			p = append(p, str(path+".reason", f.Reason, maxReason)...)
		}
		for _, name := range Methods {
			if !seen[name] {
				p = append(p, "methods: "+name+" is missing")
			}
		}
		out = m
	case StepCritic:
		var c CriticOutput
		if err := decodeStrict(answer, &c); err != nil {
			return nil, &ValidationError{Problems: []string{err.Error()}}
		}
		if c.Verdict != "holds" && c.Verdict != "revise" {
			p = append(p, fmt.Sprintf("verdict: %q is not holds or revise", c.Verdict))
		}
		if len(c.Challenges) > maxChallenges || c.Challenges == nil {
			p = append(p, fmt.Sprintf("challenges: want a list of 0 to %d", maxChallenges))
		}
		for i, ch := range c.Challenges {
			path := fmt.Sprintf("challenges[%d]", i)
			p = append(p, method(path+".method", ch.Method)...)
			p = append(p, str(path+".objection", ch.Objection, maxReason)...)
			p = append(p, score100(path+".revised_score", ch.RevisedScore)...)
		}
		p = append(p, str("summary", c.Summary, maxReason)...)
		out = c
	case StepSynthesis:
		var s SynthesisOutput
		if err := decodeStrict(answer, &s); err != nil {
			return nil, &ValidationError{Problems: []string{err.Error()}}
		}
		p = append(p, str("opportunity", s.Opportunity, maxReason)...)
		p = append(p, str("app_to_build", s.AppToBuild, maxReason)...)
		p = append(p, str("first_users", s.FirstUsers, maxReason)...)
		if len(s.TopMethods) < 1 || len(s.TopMethods) > maxTopMethods {
			p = append(p, fmt.Sprintf("top_methods: %d items, want 1 to %d", len(s.TopMethods), maxTopMethods))
		}
		for i, m := range s.TopMethods {
			p = append(p, method(fmt.Sprintf("top_methods[%d]", i), m)...)
		}
		if !slices.Contains([]string{"low", "medium", "high"}, s.Confidence) {
			p = append(p, fmt.Sprintf("confidence: %q is not one of low, medium, high", s.Confidence))
		}
		out = s
	default:
		return nil, fmt.Errorf("analyst: step %d makes no call", step)
	}
	if len(p) > 0 {
		return nil, &ValidationError{Problems: p}
	}
	b, err := json.Marshal(out)
	return b, err
}
