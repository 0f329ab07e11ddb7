package llmsim

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"storecrawl/worker/analyst"
)

// The simulated answers of a segment evaluation's LLM steps
// (analyst.BuildStepPrompt): valid JSON of each step's schema, computed
// from the input alone, so the same input always gets the same answer.

// simScores are the segment scores the simulated analyst reads.
type simScores struct {
	Demand          float64  `json:"demand"`
	Fragmentation   float64  `json:"fragmentation"`
	QualityGap      float64  `json:"quality_gap"`
	Competitiveness *float64 `json:"competitiveness"`
	Opportunity     float64  `json:"opportunity"`
}

// Rules of the simulated critic.
const (
	// criticCut is what the critic takes off a score it doubts.
	criticCut = 15
	// criticDoubtAbove: the critic doubts a score above this.
	criticDoubtAbove = 60
)

func clamp100(x float64) int { return int(math.Max(0, math.Min(100, math.Round(x)))) }

// evalAnswer answers an evaluation step.
func evalAnswer(step int, in analyst.EvalInput) any {
	switch step {
	case analyst.StepMethods:
		return simMethods(in)
	case analyst.StepCritic:
		return simCritic(in)
	}
	return simSynthesis(in)
}

// simMethods scores the methods from the segment's figures: ASO fits a
// fragmented market with beatable leaders, paid search a large demand,
// content a wide quality gap, community recurring complaints,
// partnerships a concentrated market.
func simMethods(in analyst.EvalInput) analyst.MethodsOutput {
	var sc simScores
	_ = json.Unmarshal(in.Segment.Scores, &sc)
	comp := 50.0
	if sc.Competitiveness != nil {
		comp = *sc.Competitiveness
	}
	themes := len(in.Complaints.Themes)
	topTheme := "no recurring complaint"
	if themes > 0 {
		topTheme = fmt.Sprintf("%q in %.0f%% of reviews", in.Complaints.Themes[0].Phrase, 100*in.Complaints.Themes[0].Share)
	}
	return analyst.MethodsOutput{Methods: []analyst.MethodFit{
		{Method: "aso", Score: clamp100(30 + 50*sc.Fragmentation - 0.3*comp + 20),
			Reason: fmt.Sprintf("Fragmentation %.2f with leaders' competitiveness %.0f/100 leaves search ranks to win.", sc.Fragmentation, comp)},
		{Method: "paid_search", Score: clamp100(10 + 9*sc.Demand),
			Reason: fmt.Sprintf("Demand %.2f (log10 of ratings) sets how much paid traffic there is to buy.", sc.Demand)},
		{Method: "content", Score: clamp100(25 + 60*sc.QualityGap),
			Reason: fmt.Sprintf("A quality gap of %.2f gives comparisons and how-to content something to say.", sc.QualityGap)},
		{Method: "community", Score: clamp100(20 + 12*float64(themes)),
			Reason: "Users gather around the leaders' complaints: " + topTheme + "."},
		{Method: "partnerships", Score: clamp100(20 + 40*(1-sc.Fragmentation)),
			Reason: fmt.Sprintf("With fragmentation %.2f, distribution through partners matters more where few apps hold the market.", sc.Fragmentation)},
	}}
}

// simCritic doubts every score above criticDoubtAbove.
func simCritic(in analyst.EvalInput) analyst.CriticOutput {
	out := analyst.CriticOutput{Verdict: "holds", Challenges: []analyst.Challenge{}}
	if in.Methods == nil {
		out.Summary = "No scores to challenge."
		return out
	}
	for _, m := range in.Methods.Methods {
		if m.Score > criticDoubtAbove && len(out.Challenges) < 5 {
			out.Challenges = append(out.Challenges, analyst.Challenge{Method: m.Method, RevisedScore: m.Score - criticCut,
				Objection: fmt.Sprintf("%d is high for a new app: %d reference apps already compete for the same users.", m.Score, len(in.ReferenceApps))})
		}
	}
	if len(out.Challenges) > 0 {
		out.Verdict = "revise"
		out.Summary = fmt.Sprintf("%d of the scores are optimistic for a newcomer; the rest hold.", len(out.Challenges))
	} else {
		out.Summary = "The scores are grounded in the segment's figures; none moves by more than 10."
	}
	return out
}

// simSynthesis ranks the methods after the critic's revisions.
func simSynthesis(in analyst.EvalInput) analyst.SynthesisOutput {
	scores := map[string]int{}
	var names []string
	if in.Methods != nil {
		for _, m := range in.Methods.Methods {
			scores[m.Method] = m.Score
			names = append(names, m.Method)
		}
	}
	if in.Critic != nil {
		for _, c := range in.Critic.Challenges {
			scores[c.Method] = c.RevisedScore
		}
	}
	sort.SliceStable(names, func(i, j int) bool { return scores[names[i]] > scores[names[j]] })
	if len(names) == 0 {
		names = []string{"aso"}
	}
	need := "a simpler, more reliable app"
	conf := "medium"
	if c := in.Complaints; len(c.Themes) > 0 {
		need = fmt.Sprintf("an app without the %q problems users report", c.Themes[0].Phrase)
	} else {
		conf = "low"
	}
	name := in.Segment.Name
	leader := "the leaders"
	if len(in.ReferenceApps) > 0 && in.ReferenceApps[0].Name != "" {
		leader = in.ReferenceApps[0].Name
	}
	return analyst.SynthesisOutput{
		Opportunity: clip(fmt.Sprintf("%s: users want %s, and %s does not give it.", name, need, leader), 300),
		AppToBuild:  clip(fmt.Sprintf("A focused %s app built around %s.", name, need), 300),
		FirstUsers:  clip(fmt.Sprintf("Reviewers of %s who complain, reached where people search for %s.", leader, strings.Join(in.Segment.Keywords[:min(2, len(in.Segment.Keywords))], " and ")), 300),
		TopMethods:  names[:min(2, len(names))],
		Confidence:  conf,
	}
}
