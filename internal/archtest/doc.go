// Package archtest holds only a test: the rules of which storecrawl
// packages may import which, checked on what `go list` reports for the
// native and the GOOS=js GOARCH=wasm build.
package archtest
