//go:build js && wasm

package cf

import (
	"net/http"

	"github.com/syumai/workers/cloudflare/fetch"
)

// Fetcher sends requests with the Workers fetch API (an upstream.Doer):
// it keeps http.Client, and the TLS stack it links, out of the module.
type Fetcher struct{}

// Do sends one request.
func (Fetcher) Do(req *http.Request) (*http.Response, error) {
	return fetch.NewClient().Do(&fetch.Request{Request: req}, nil)
}
