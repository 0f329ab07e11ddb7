package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Bounds of the HTTP exchange.
const (
	// MaxResponseBytes caps a completion body read: a brief is a few KB and
	// MaxCompletionTokens of text at most ~4 bytes a token; 1 MiB leaves
	// room for verbose envelopes without letting a runaway body in.
	MaxResponseBytes = 1 << 20
	// maxErrorMessage caps the error text kept from an error body.
	maxErrorMessage = 300
	// maxRetryAfter caps a Retry-After honoured (a misconfigured endpoint
	// must not park the analyst for a day).
	maxRetryAfter = 10 * time.Minute
)

// Doer sends one HTTP request: *http.Client natively, the Workers fetch
// client (cf.Fetcher) in the Worker.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// OpenAI is a Client for any OpenAI-compatible chat-completions endpoint:
// POST {BaseURL}/chat/completions with a Bearer API key.
type OpenAI struct {
	// BaseURL is the API root, e.g. https://api.openai.com/v1 or the
	// simulator's http://127.0.0.1:8791/v1.
	BaseURL string
	APIKey  string
	// Model is used when a Request names none.
	Model string
	Doer  Doer
}

type oaRequest struct {
	Model          string    `json:"model"`
	Messages       []Message `json:"messages"`
	MaxTokens      int       `json:"max_tokens,omitempty"`
	Temperature    float64   `json:"temperature"`
	ResponseFormat *oaFormat `json:"response_format,omitempty"`
	Stream         bool      `json:"stream"`
}

type oaFormat struct {
	Type string `json:"type"`
}

type oaResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *Usage `json:"usage"`
}

type oaError struct {
	Error struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Complete implements Client.
func (c OpenAI) Complete(ctx context.Context, req Request) (Response, error) {
	if c.Doer == nil || c.BaseURL == "" {
		return Response{}, fmt.Errorf("%w: OpenAI client has no endpoint", ErrPermanent)
	}
	if len(req.Messages) == 0 {
		return Response{}, fmt.Errorf("%w: no messages", ErrPermanent)
	}
	model := req.Model
	if model == "" {
		model = c.Model
	}
	body := oaRequest{Model: model, Messages: req.Messages, MaxTokens: req.MaxTokens, Temperature: req.Temperature}
	if req.JSON {
		body.ResponseFormat = &oaFormat{Type: "json_object"}
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return Response{}, fmt.Errorf("%w: %v", ErrPermanent, err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.BaseURL, "/")+"/chat/completions", bytes.NewReader(payload))
	if err != nil {
		return Response{}, fmt.Errorf("%w: %v", ErrPermanent, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if c.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	resp, err := c.Doer.Do(hreq)
	if err != nil {
		return Response{}, fmt.Errorf("%w: %v", ErrUpstream, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return Response{}, fmt.Errorf("%w: reading body: %v", ErrUpstream, err)
	}
	if len(raw) > MaxResponseBytes {
		return Response{}, fmt.Errorf("%w: body over %d bytes", ErrUpstream, MaxResponseBytes)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Response{}, statusError(resp, raw)
	}
	var out oaResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		return Response{}, fmt.Errorf("%w: malformed completion: %v", ErrUpstream, err)
	}
	if len(out.Choices) == 0 || out.Choices[0].Message.Content == nil {
		return Response{}, fmt.Errorf("%w: completion has no message content", ErrUpstream)
	}
	r := Response{Text: *out.Choices[0].Message.Content, Model: out.Model, FinishReason: out.Choices[0].FinishReason}
	if out.Usage != nil && (out.Usage.PromptTokens > 0 || out.Usage.CompletionTokens > 0) {
		r.Usage = *out.Usage
		r.Usage.Estimated = false
		if r.Usage.TotalTokens == 0 {
			r.Usage.TotalTokens = r.Usage.PromptTokens + r.Usage.CompletionTokens
		}
	} else {
		r.Usage = estimatedUsage(req.Messages, r.Text)
	}
	return r, nil
}

func statusError(resp *http.Response, raw []byte) error {
	e := &StatusError{Status: resp.StatusCode, RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	var body oaError
	if json.Unmarshal(raw, &body) == nil && body.Error.Message != "" {
		e.Message = body.Error.Message
	} else {
		e.Message = strings.TrimSpace(string(raw))
	}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	if len(e.Message) > maxErrorMessage {
		e.Message = e.Message[:maxErrorMessage]
	}
	return e
}

// retryAfter reads delay-seconds (the HTTP-date form is not used by these
// endpoints and reads as 0).
func retryAfter(v string) time.Duration {
	n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || n <= 0 {
		return 0
	}
	return min(time.Duration(n*float64(time.Second)), maxRetryAfter)
}

// RetryAfterOf returns the Retry-After of a rate-limit error (0 if none).
func RetryAfterOf(err error) time.Duration {
	var se *StatusError
	if errors.As(err, &se) {
		return se.RetryAfter
	}
	return 0
}
