package analyst

import (
	"strings"
	"testing"
)

func TestValidateStep(t *testing.T) {
	methods := `{"methods": [{"method": "aso", "score": 70, "reason": "r"}, {"method": "paid_search", "score": 20, "reason": "r"},
  {"method": "content", "score": 40, "reason": "r"}, {"method": "community", "score": 55, "reason": "r"}, {"method": "partnerships", "score": 10, "reason": "r"}]}`
	for _, c := range []struct {
		step    int
		answer  string
		problem string // "" = valid
	}{
		{StepMethods, methods, ""},
		{StepMethods, "```json\n" + methods + "\n```", ""},
		{StepMethods, "Here it is: " + methods, "not a JSON object"},
		{StepMethods, strings.Replace(methods, `"partnerships", "score": 10`, `"aso", "score": 10`, 1), "partnerships is missing"},
		{StepMethods, strings.Replace(methods, `"score": 70`, `"score": 170`, 1), "methods[0].score: 170 is not 0 to 100"},
		{StepMethods, strings.Replace(methods, `"method": "content"`, `"method": "tv"`, 1), `"tv" is not one of`},
		{StepCritic, `{"verdict": "revise", "challenges": [{"method": "aso", "objection": "o", "revised_score": 50}], "summary": "s"}`, ""},
		{StepCritic, `{"verdict": "holds", "challenges": [], "summary": "s"}`, ""},
		{StepCritic, `{"verdict": "maybe", "challenges": [], "summary": "s"}`, "verdict"},
		{StepCritic, `{"verdict": "holds", "summary": "s"}`, "challenges"},
		{StepCritic, `{"verdict": "holds", "challenges": [], "summary": "s", "extra": 1}`, "unknown field"},
		{StepSynthesis, `{"opportunity": "o", "app_to_build": "a", "first_users": "f", "top_methods": ["aso"], "confidence": "high"}`, ""},
		{StepSynthesis, `{"opportunity": "o", "app_to_build": "", "first_users": "f", "top_methods": [], "confidence": "sure"}`, "app_to_build: must not be empty"},
	} {
		out, err := ValidateStep(c.step, c.answer)
		switch {
		case c.problem == "" && (err != nil || len(out) == 0):
			t.Errorf("step %d %s: %v", c.step, c.answer, err)
		case c.problem != "" && (err == nil || !strings.Contains(err.Error(), c.problem)):
			t.Errorf("step %d %s: %v, want %q", c.step, c.answer, err, c.problem)
		}
	}
	if _, err := ValidateStep(StepThemes, "{}"); err == nil {
		t.Error("step 2 makes no call: nothing to validate")
	}
}

func TestBuildStepPromptNeedsTheStepsBefore(t *testing.T) {
	in := EvalInput{Segment: SegmentFacts{SegmentID: 1, Name: "n", Keywords: []string{"k"}}, Methods: &MethodsOutput{}}
	m1, shown, err := BuildStepPrompt(StepMethods, in)
	if err != nil || strings.Contains(string(shown), `"methods"`) || !strings.HasPrefix(m1[1].Content, EvalMarker+"methods\n") {
		t.Fatalf("methods prompt shows later steps or no marker: %v %s", err, shown)
	}
	m2, _, _ := BuildStepPrompt(StepMethods, in)
	if m1[1].Content != m2[1].Content {
		t.Fatal("same input, different prompt")
	}
	if _, _, err := BuildStepPrompt(StepSynthesis, in); err == nil {
		t.Fatal("a synthesis without the critic")
	}
	if step, got, ok := ParseStepPrompt(m1); !ok || step != StepMethods || got.Segment.Name != "n" {
		t.Fatalf("parse: %v %d %+v", ok, step, got)
	}
}

func TestReferenceAppsLeadersThenRisers(t *testing.T) {
	v := func(x float64) *float64 { return &x }
	var src refSource
	byID := map[int64]RefApp{}
	for i := int64(1); i <= 10; i++ {
		src.Apps = append(src.Apps, struct {
			TrackID int64   `json:"track_id"`
			Share   float64 `json:"share"`
		}{i, 0.1})
		byID[i] = RefApp{AppID: i, Velocity7d: v(float64(i % 4))}
	}
	byID[9] = RefApp{AppID: 9} // no velocity measured
	got := referenceApps(src, byID)
	var ids []int64
	for _, r := range got {
		ids = append(ids, r.AppID)
	}
	// Leaders 1–5; risers among 6–10 by 7-day velocity: 7 (3), 6 (2), 10 (2); 8 (0) and 9 (none) are not rising.
	if want := []int64{1, 2, 3, 4, 5, 7, 6, 10}; len(ids) != len(want) || got[5].Role != "riser" || got[0].Role != "leader" {
		t.Fatalf("reference apps %v", ids)
	} else {
		for i := range want {
			if ids[i] != want[i] {
				t.Fatalf("reference apps %v, want %v", ids, want)
			}
		}
	}
}
