//go:build js && wasm

package cf

import (
	"net/http"

	"github.com/syumai/workers/cloudflare/fetch"
)

// Fetcher sends requests with the Workers fetch API (an upstream.Doer):
// it keeps http.Client, and the TLS stack it links, out of the module.
type Fetcher struct{}

// Do sends one request. Redirects come back as they are (redirect
// "manual": workerd returns the 3xx with its Location, not an opaque
// answer) for upstream.Client to follow or refuse; fetch's default,
// "follow", would follow them to any host.
func (Fetcher) Do(req *http.Request) (*http.Response, error) {
	return fetch.NewClient().Do(&fetch.Request{Request: req}, &fetch.RequestInit{Redirect: fetch.RedirectModeManual})
}
