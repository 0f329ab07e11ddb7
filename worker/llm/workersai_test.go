package llm

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

type fakeRunner struct {
	model string
	input map[string]any
	out   string
	err   error
}

func (f *fakeRunner) Run(_ context.Context, model string, input []byte) ([]byte, error) {
	f.model = model
	_ = json.Unmarshal(input, &f.input)
	return []byte(f.out), f.err
}

func TestWorkersAI(t *testing.T) {
	msgs := []Message{{Role: RoleUser, Content: "hello"}}
	f := &fakeRunner{out: `{"response":"hi there","usage":{"prompt_tokens":11,"completion_tokens":3,"total_tokens":14}}`}
	resp, err := WorkersAI{Runner: f, Model: "@cf/meta/llama-3.1-8b-instruct"}.Complete(context.Background(), Request{Messages: msgs, MaxTokens: 50, JSON: true})
	if err != nil {
		t.Fatal(err)
	}
	if f.model != "@cf/meta/llama-3.1-8b-instruct" || f.input["max_tokens"] != float64(50) || f.input["response_format"] == nil {
		t.Errorf("input %v model %s", f.input, f.model)
	}
	if resp.Text != "hi there" || resp.Usage != (Usage{PromptTokens: 11, CompletionTokens: 3, TotalTokens: 14}) {
		t.Errorf("resp %+v", resp)
	}
	// JSON mode: response is the object itself; no usage → estimated.
	f.out = `{"response":{"headline":"x"}}`
	resp, err = WorkersAI{Runner: f}.Complete(context.Background(), Request{Messages: msgs})
	if err != nil || resp.Text != `{"headline":"x"}` || !resp.Usage.Estimated {
		t.Errorf("object response: %+v %v", resp, err)
	}
	for _, tc := range []struct {
		out string
		err error
		is  error
	}{
		{`{"response":null}`, nil, ErrUpstream},
		{`nope`, nil, ErrUpstream},
		{``, errors.New("AiError: 3040: Capacity temporarily exceeded, please try again."), ErrRateLimited},
		{``, errors.New("5007: No such model"), ErrPermanent},
		{``, errors.New("network lost"), ErrUpstream},
	} {
		f.out, f.err = tc.out, tc.err
		if _, err := (WorkersAI{Runner: f}).Complete(context.Background(), Request{Messages: msgs}); !errors.Is(err, tc.is) {
			t.Errorf("%q/%v: %v, want %v", tc.out, tc.err, err, tc.is)
		}
	}
	if _, err := (WorkersAI{}).Complete(context.Background(), Request{Messages: msgs}); !errors.Is(err, ErrPermanent) {
		t.Errorf("no binding: %v", err)
	}
}
