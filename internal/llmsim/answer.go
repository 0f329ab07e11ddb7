package llmsim

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"storecrawl/worker/analyst"
	"storecrawl/worker/llm"
)

// The simulator's answers are a pure function of the conversation.

// briefMarker starts the user message of a brief prompt
// (analyst.BuildBriefPrompt); the cluster's JSON follows it.
const briefMarker = "Market cluster:\n"

// Confidence rules of the simulated analyst: how many reviews it read.
const (
	highConfidenceReviews   = 40
	mediumConfidenceReviews = 10
	// simLeaders is how many leaders the simulated brief discusses.
	simLeaders = 3
)

type simAnswer struct {
	text  string
	hash  string
	brief bool
	// evalStep: an evaluation step's prompt (analyst.BuildStepPrompt).
	evalStep bool
	invalid  bool
}

// answer builds the reply. invalid is the configured mode: "first" breaks
// the first answer of a conversation (one with no assistant turn yet),
// "always" every answer.
func answer(msgs []llm.Message, jsonMode bool, invalid string) simAnswer {
	a := simAnswer{hash: llm.PromptHash(msgs)}
	in, isBrief := briefInput(msgs)
	retry := false
	for _, m := range msgs {
		retry = retry || m.Role == llm.RoleAssistant
	}
	step, evalIn, isEval := analyst.ParseStepPrompt(msgs)
	switch {
	case isEval:
		a.evalStep = true
		out, _ := json.Marshal(evalAnswer(step, evalIn))
		a.text = string(out)
		if invalid == "always" || (invalid == "first" && !retry) {
			a.invalid = true
			a.text = "Here is the JSON:\n" + a.text
		}
	case isBrief:
		a.brief = true
		a.invalid = invalid == "always" || (invalid == "first" && !retry)
		b := simBrief(in)
		if a.invalid {
			// Schema-breaking in a realistic way: prose before the JSON and
			// the confidence spelled out of the enum.
			b.Confidence = "fairly high"
			out, _ := json.Marshal(b)
			a.text = "Here is the brief you asked for:\n" + string(out)
			return a
		}
		out, _ := json.Marshal(b)
		a.text = string(out)
	case jsonMode:
		out, _ := json.Marshal(map[string]string{"answer": "llm-sim " + a.hash[:12]})
		a.text = string(out)
	default:
		a.text = "llm-sim answer " + a.hash[:12] + "."
	}
	return a
}

// briefInput finds the cluster JSON of a brief prompt.
func briefInput(msgs []llm.Message) (analyst.BriefInput, bool) {
	for _, m := range msgs {
		if m.Role != llm.RoleUser || !strings.HasPrefix(m.Content, briefMarker) {
			continue
		}
		var in analyst.BriefInput
		if json.Unmarshal([]byte(strings.TrimPrefix(m.Content, briefMarker)), &in) == nil && len(in.Leaders) > 0 {
			return in, true
		}
	}
	return analyst.BriefInput{}, false
}

// simBrief writes a valid brief from the input alone.
func simBrief(in analyst.BriefInput) analyst.Brief {
	reviews := 0
	for _, l := range in.Leaders {
		reviews += l.Reviews
	}
	conf := "low"
	switch {
	case reviews >= highConfidenceReviews:
		conf = "high"
	case reviews >= mediumConfidenceReviews:
		conf = "medium"
	}
	label := in.Label
	if label == "" {
		label = "cluster " + in.ClusterID
	}
	need := "a simpler, more reliable app"
	if len(in.ClusterThemes) > 0 {
		need = fmt.Sprintf("an app without the %q problems users report (%.0f%% of reviews)", in.ClusterThemes[0].Phrase, 100*in.ClusterThemes[0].Share)
	}
	if in.ThemesMissingReason != "" {
		conf = "low"
	}
	b := analyst.Brief{
		Headline:       clip(fmt.Sprintf("%s: room for %s", label, need), 140),
		Market:         clip(marketText(in), 1200),
		UnmetNeed:      clip("Users want "+need+".", 1200),
		ProductConcept: clip(fmt.Sprintf("A focused %s app that fixes what the leaders' reviews complain about first.", label), 1200),
		Risks:          []string{"The leaders may fix these complaints first.", "Review themes come from a small recent sample."},
		Confidence:     conf,
	}
	for _, l := range in.Leaders[:min(len(in.Leaders), simLeaders)] {
		bl := analyst.BriefLeader{AppID: l.AppID, Name: clip(l.Name, 120)}
		if bl.Name == "" {
			bl.Name = fmt.Sprintf("app %d", l.AppID)
		}
		for _, t := range l.Themes[:min(len(l.Themes), 3)] {
			bl.Weaknesses = append(bl.Weaknesses, clip(fmt.Sprintf("Complaints about %q in %.0f%% of reviews", t.Phrase, 100*t.Share), 300))
		}
		if len(bl.Weaknesses) == 0 {
			why := l.ThemesMissingReason
			if why == "" {
				why = "no clear complaint theme in recent reviews"
			}
			bl.Weaknesses = []string{clip("Not known from reviews: "+why, 300)}
		}
		b.Leaders = append(b.Leaders, bl)
	}
	return b
}

// marketText states the cluster's scores as given, on the API's scales,
// and says plainly when there are no complaint themes.
func marketText(in analyst.BriefInput) string {
	m := in.Market
	s := fmt.Sprintf("%d apps around %s; opportunity %s/100, demand %s (log10 of ratings), fragmentation %s, leaders' competitiveness %s.",
		m.AppCount, strings.Join(in.Keywords, ", "), score(m.OpportunityScore), score(m.Demand), score(m.Fragmentation), score(in.LeadersCompetitiveness))
	if in.LeadersCompetitiveness != nil {
		s = strings.TrimSuffix(s, ".") + "/100."
	}
	if in.ThemesMissingReason != "" {
		s += " No complaint themes: " + in.ThemesMissingReason + "."
	}
	return s
}

// score prints a score as given, or says it is not scored yet.
func score(v *float64) string {
	if v == nil {
		return "not scored yet"
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// Token counting: the simulator's own tokenizer, deliberately not the
// estimator's formula, so the analyst's estimates meet real-looking counts:
// each run of letters or digits is a token per 5 characters (rounded up),
// every other non-space character is a token, and each message costs 4
// more for its framing (3 for the reply's priming), as OpenAI counts.
const (
	runeRunPerToken = 5
	msgFraming      = 4
	replyPriming    = 3
)

func countText(s string) int64 {
	var n int64
	run := 0
	flush := func() {
		if run > 0 {
			n += int64((run + runeRunPerToken - 1) / runeRunPerToken)
			run = 0
		}
	}
	for _, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			run++
		case unicode.IsSpace(r):
			flush()
		default:
			flush()
			n++
		}
	}
	flush()
	return n
}

func countPrompt(msgs []llm.Message) int64 {
	n := int64(replyPriming)
	for _, m := range msgs {
		n += msgFraming + countText(m.Content)
	}
	return n
}

// fit cuts an answer to maxTokens as a real endpoint does (finish_reason
// "length"); the count is the text's.
func fit(text string, maxTokens int) (string, int64, string) {
	n := countText(text)
	if n <= int64(maxTokens) {
		return text, n, "stop"
	}
	words := strings.SplitAfter(text, " ")
	var b strings.Builder
	for _, w := range words {
		if countText(b.String()+w) > int64(maxTokens) {
			break
		}
		b.WriteString(w)
	}
	out := b.String()
	return out, countText(out), "length"
}
