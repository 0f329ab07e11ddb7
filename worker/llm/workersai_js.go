//go:build js && wasm

package llm

import (
	"context"
	"fmt"
	"syscall/js"

	"github.com/syumai/workers/cloudflare"

	"storecrawl/worker/cf"
)

// AIBinding is the Runner over the Workers AI binding of that name (env.AI).
type AIBinding string

// Run implements Runner: env[name].run(model, JSON.parse(input)), the
// result back through JSON.stringify (one crossing each way).
func (b AIBinding) Run(_ context.Context, model string, input []byte) ([]byte, error) {
	ai := cloudflare.GetBinding(string(b))
	if ai.IsUndefined() || ai.IsNull() {
		return nil, fmt.Errorf("Workers AI binding %s missing", string(b))
	}
	jsonObj := js.Global().Get("JSON")
	arg, err := cf.Call(jsonObj, "parse", string(input))
	if err != nil {
		return nil, err
	}
	p, err := cf.Call(ai, "run", model, arg)
	if err != nil {
		return nil, err
	}
	v, err := cf.Await(p)
	if err != nil {
		return nil, err
	}
	s, err := cf.Call(jsonObj, "stringify", v)
	if err != nil {
		return nil, err
	}
	return []byte(s.String()), nil
}
