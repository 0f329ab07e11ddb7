package llm

import "unicode/utf8"

// Token estimation. Two numbers per prompt, for two different jobs:
//
//   - EstimateTokens is the typical count (about 4 bytes of English a token
//     for GPT/Llama BPE vocabularies): the OmniLimiter cost of a call and the
//     per-minute budget, where a fair guess is what pacing needs;
//   - MaxPromptTokens is an upper bound (a BPE token is at least one byte, so
//     a prompt never has more tokens than bytes, plus the per-message
//     framing): what the daily spend cap reserves, so that a call admitted
//     under the cap cannot take spend over it.
const (
	// bytesPerToken is the typical UTF-8 bytes per token of English text.
	bytesPerToken = 4
	// messageOverheadTokens frames each chat message (role, separators):
	// OpenAI documents 3-4 tokens a message; 4 is the safe side.
	messageOverheadTokens = 4
	// replyPrimingTokens start the assistant's reply.
	replyPrimingTokens = 3
)

// EstimateTokens is the typical token count of a text (at least 1 for a
// non-empty one).
func EstimateTokens(text string) int64 {
	if text == "" {
		return 0
	}
	// Count non-ASCII runes once more: CJK and emoji run 1-2 tokens a rune,
	// far fewer bytes a token than English.
	n := int64(len(text))
	extra := int64(0)
	for _, r := range text {
		if r >= utf8.RuneSelf {
			extra++
		}
	}
	return max(1, (n+bytesPerToken-1)/bytesPerToken+extra/2)
}

// EstimatePrompt is the typical token count of a chat prompt.
func EstimatePrompt(msgs []Message) int64 {
	t := int64(replyPrimingTokens)
	for _, m := range msgs {
		t += messageOverheadTokens + EstimateTokens(m.Content)
	}
	return t
}

// MaxPromptTokens is an upper bound on a chat prompt's token count.
func MaxPromptTokens(msgs []Message) int64 {
	t := int64(replyPrimingTokens)
	for _, m := range msgs {
		t += messageOverheadTokens + int64(len(m.Content)) + int64(len(m.Role))
	}
	return t
}

// estimatedUsage stands in for a usage block an endpoint did not send.
func estimatedUsage(msgs []Message, answer string) Usage {
	p, c := EstimatePrompt(msgs), EstimateTokens(answer)
	return Usage{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c, Estimated: true}
}
