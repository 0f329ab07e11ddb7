//go:build js && wasm

package cf

import (
	"context"
	"fmt"
	"strings"
	"syscall/js"

	"github.com/syumai/workers/cloudflare"
)

// Namespace is a Durable Object namespace binding; objects are addressed by
// name (idFromName), created near LocationHint when it is set.
type Namespace struct {
	Binding      string
	LocationHint string
}

func (n Namespace) stub(name string) (js.Value, error) {
	ns := cloudflare.GetBinding(n.Binding)
	if ns.IsUndefined() {
		return js.Value{}, fmt.Errorf("durable object binding %s missing", n.Binding)
	}
	id, err := Call(ns, "idFromName", name)
	if err != nil {
		return js.Value{}, err
	}
	if n.LocationHint == "" {
		return Call(ns, "get", id)
	}
	return Call(ns, "get", id, Object(map[string]any{"locationHint": n.LocationHint}))
}

// Fetch sends one HTTP request to the named object and returns its answer.
func (n Namespace) Fetch(_ context.Context, name, method, path string, body []byte) (int, []byte, error) {
	stub, err := n.stub(name)
	if err != nil {
		return 0, nil, err
	}
	init := Object(map[string]any{"method": method})
	if body != nil {
		init.Set("body", string(body))
		init.Set("headers", Object(map[string]any{"content-type": "application/json"}))
	}
	p, err := Call(stub, "fetch", "https://"+strings.ToLower(n.Binding)+".internal"+path, init)
	if err != nil {
		return 0, nil, err
	}
	resp, err := Await(p)
	if err != nil {
		return 0, nil, err
	}
	textP, err := Call(resp, "text")
	if err != nil {
		return 0, nil, err
	}
	text, err := Await(textP)
	if err != nil {
		return 0, nil, err
	}
	return resp.Get("status").Int(), []byte(text.String()), nil
}

// Call reaches the named object over RPC, its call(method, path, body)
// method answering {status, json}: no Request/Response objects on a hot path.
func (n Namespace) Call(_ context.Context, name, method, path string, body []byte) (int, []byte, error) {
	stub, err := n.stub(name)
	if err != nil {
		return 0, nil, err
	}
	p, err := Call(stub, "call", method, path, string(body))
	if err != nil {
		return 0, nil, err
	}
	out, err := Await(p)
	if err != nil {
		return 0, nil, err
	}
	return out.Get("status").Int(), []byte(out.Get("json").String()), nil
}
