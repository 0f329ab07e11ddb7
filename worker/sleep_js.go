//go:build js && wasm

package worker

import "storecrawl/worker/cf"

func init() { Sleep = cf.Sleep }
