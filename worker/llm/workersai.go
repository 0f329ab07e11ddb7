package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Runner runs a Workers AI model: env.AI.run(model, input) with input and
// output as JSON. The Worker's implementation is the AI binding
// (workersai_js.go); tests pass a fake.
type Runner interface {
	Run(ctx context.Context, model string, input []byte) ([]byte, error)
}

// WorkersAI is a Client over the Workers AI binding.
type WorkersAI struct {
	Runner Runner
	// Model is used when a Request names none, e.g.
	// "@cf/meta/llama-3.1-8b-instruct".
	Model string
}

type aiInput struct {
	Messages       []Message `json:"messages"`
	MaxTokens      int       `json:"max_tokens,omitempty"`
	Temperature    float64   `json:"temperature"`
	ResponseFormat *oaFormat `json:"response_format,omitempty"`
}

type aiOutput struct {
	// Response is a string, or an object when the model answered in JSON
	// mode.
	Response json.RawMessage `json:"response"`
	Usage    *Usage          `json:"usage"`
}

// Complete implements Client.
func (c WorkersAI) Complete(ctx context.Context, req Request) (Response, error) {
	if c.Runner == nil {
		return Response{}, fmt.Errorf("%w: Workers AI binding not configured", ErrPermanent)
	}
	model := req.Model
	if model == "" {
		model = c.Model
	}
	in := aiInput{Messages: req.Messages, MaxTokens: req.MaxTokens, Temperature: req.Temperature}
	if req.JSON {
		in.ResponseFormat = &oaFormat{Type: "json_object"}
	}
	payload, err := json.Marshal(in)
	if err != nil {
		return Response{}, fmt.Errorf("%w: %v", ErrPermanent, err)
	}
	raw, err := c.Runner.Run(ctx, model, payload)
	if err != nil {
		return Response{}, classifyAIError(err)
	}
	if len(raw) > MaxResponseBytes {
		return Response{}, fmt.Errorf("%w: output over %d bytes", ErrUpstream, MaxResponseBytes)
	}
	var out aiOutput
	if err := json.Unmarshal(raw, &out); err != nil {
		return Response{}, fmt.Errorf("%w: malformed Workers AI output: %v", ErrUpstream, err)
	}
	var text string
	switch r := strings.TrimSpace(string(out.Response)); {
	case r == "" || r == "null":
		return Response{}, fmt.Errorf("%w: Workers AI output has no response", ErrUpstream)
	case r[0] == '"':
		if err := json.Unmarshal(out.Response, &text); err != nil {
			return Response{}, fmt.Errorf("%w: %v", ErrUpstream, err)
		}
	default:
		text = r // JSON mode: the object itself is the answer
	}
	resp := Response{Text: text, Model: model}
	if out.Usage != nil && (out.Usage.PromptTokens > 0 || out.Usage.CompletionTokens > 0) {
		resp.Usage = *out.Usage
		if resp.Usage.TotalTokens == 0 {
			resp.Usage.TotalTokens = resp.Usage.PromptTokens + resp.Usage.CompletionTokens
		}
	} else {
		resp.Usage = estimatedUsage(req.Messages, text)
	}
	return resp, nil
}

// classifyAIError maps a binding error to the package's errors: Workers AI
// reports its rate limit as error 3040 ("Capacity temporarily exceeded")
// or a 429 in the message.
func classifyAIError(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "3040") || strings.Contains(msg, "429") || strings.Contains(strings.ToLower(msg), "rate limit"):
		return &StatusError{Status: 429, Message: cut(msg, maxErrorMessage)}
	case strings.Contains(msg, "5007") || strings.Contains(strings.ToLower(msg), "no such model"):
		return &StatusError{Status: 404, Message: cut(msg, maxErrorMessage)}
	default:
		return fmt.Errorf("%w: %s", ErrUpstream, cut(msg, maxErrorMessage))
	}
}
