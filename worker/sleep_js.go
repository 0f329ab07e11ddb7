//go:build js && wasm

package worker

import "storecrawl/worker/jsx"

func init() { Sleep = jsx.Sleep }
