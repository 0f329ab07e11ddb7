//go:build js && wasm

// Package cf is the only wasm-only package of the Worker: thin typed
// clients over the Cloudflare bindings, in the style of syumai/workers'
// per-product packages: D1 (a d1.Driver), KV, R2, Queues, Durable Object
// stubs, the Workers fetch API, and the helpers that export Go functions to
// the JS shim. Bindings are read from the current call's env each time: one
// Go instance serves the Worker and every Durable Object of its isolate.
// Nothing here decides anything or calls back into the Worker's features.
package cf
