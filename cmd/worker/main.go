//go:build js && wasm

// Command worker is the Go program compiled to build/app.wasm. The JS shim
// (shim/) instantiates it once per isolate; main registers every handler the
// shim calls (HTTP, cron, queue, and the Durable Objects' decision functions),
// signals readiness and then parks, so the same instance serves every call.
package main

import (
	"storecrawl/worker"
)

func main() {
	worker.Register()
	select {}
}
