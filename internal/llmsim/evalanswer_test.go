package llmsim

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"storecrawl/worker/analyst"
	"storecrawl/worker/llm"
)

func evalSample() analyst.EvalInput {
	v7 := 4.0
	return analyst.EvalInput{
		Segment: analyst.SegmentFacts{SegmentID: 7, Name: "budget planner", Keywords: []string{"budget app", "expense tracker"},
			Scores: json.RawMessage(`{"demand": 4.2, "fragmentation": 0.8, "quality_gap": 0.3, "competitiveness": 40, "opportunity": 61}`),
			Trend:  "heating", TrendFigures: json.RawMessage(`{"demand_growth_7d": 0.1}`)},
		ReferenceApps: []analyst.RefApp{{AppID: 1, Name: "Mint", Role: "leader", Share: 0.3, Rating: 4.1, RatingCount: 90000, Velocity7d: &v7}},
		Complaints: analyst.ThemesOutput{ReviewsRead: 40, Themes: []analyst.ThemeInput{{Phrase: "sync", Share: 0.2,
			Quotes: []analyst.Quote{{ReviewID: "r1", Rating: 1, Text: "Sync fails"}}}}},
	}
}

// Each evaluation step gets a valid answer of its schema, computed from
// its input, through the real client; the critic challenges the methods'
// high scores and the synthesis ranks them after its revisions.
func TestEvaluationStepsRoundTrip(t *testing.T) {
	srv, _ := newSim(t, Config{}, "")
	c := client(srv, "")
	in := evalSample()
	for _, step := range []int{analyst.StepMethods, analyst.StepCritic, analyst.StepSynthesis} {
		msgs, _, err := analyst.BuildStepPrompt(step, in)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Complete(context.Background(), llm.Request{Messages: msgs, MaxTokens: analyst.StepMaxTokens(step), JSON: true})
		if err != nil {
			t.Fatal(err)
		}
		out, err := analyst.ValidateStep(step, resp.Text)
		if err != nil {
			t.Fatalf("step %d: the simulator's answer is invalid: %v\n%s", step, err, resp.Text)
		}
		switch step {
		case analyst.StepMethods:
			in.Methods = &analyst.MethodsOutput{}
			json.Unmarshal(out, in.Methods)
		case analyst.StepCritic:
			in.Critic = &analyst.CriticOutput{}
			json.Unmarshal(out, in.Critic)
			if in.Critic.Verdict != "revise" || len(in.Critic.Challenges) == 0 || in.Critic.Challenges[0].Method != "aso" {
				t.Fatalf("critic %+v of methods %+v", in.Critic, in.Methods)
			}
		case analyst.StepSynthesis:
			var s analyst.SynthesisOutput
			json.Unmarshal(out, &s)
			if !strings.Contains(s.Opportunity, `"sync"`) || !strings.Contains(s.FirstUsers, "Mint") || s.Confidence != "medium" {
				t.Fatalf("synthesis %+v", s)
			}
		}
	}
	// "first": the first answer breaks the schema, the retry is valid.
	postConfig(t, srv, `{"invalid":"first"}`)
	msgs, _, _ := analyst.BuildStepPrompt(analyst.StepMethods, in)
	resp, _ := c.Complete(context.Background(), llm.Request{Messages: msgs, MaxTokens: analyst.MethodsMaxTokens, JSON: true})
	_, verr := analyst.ValidateStep(analyst.StepMethods, resp.Text)
	next := analyst.NextStep(1, msgs, resp.Text, verr)
	if verr == nil || next.Action != analyst.Retry {
		t.Fatalf("invalid first answer accepted: %v", verr)
	}
	resp, _ = c.Complete(context.Background(), llm.Request{Messages: next.Messages, MaxTokens: analyst.MethodsMaxTokens, JSON: true})
	if _, err := analyst.ValidateStep(analyst.StepMethods, resp.Text); err != nil {
		t.Fatalf("retry answer invalid: %v", err)
	}
}
