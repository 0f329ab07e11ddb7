// Package appstore parses App Store responses: the iTunes lookup/search JSON
// API and the (older) apps.apple.com product page HTML.
//
// It is pure Go (no syscall/js) so it can be tested natively and shared by the
// Worker and the local upstream simulator's tests.
package appstore

import "errors"

var (
	// ErrNotFound reports a well-formed lookup response with no results:
	// the app does not exist (or is not sold in that storefront).
	ErrNotFound = errors.New("appstore: app not found")
	// ErrParse reports a body that is not what a real App Store response
	// looks like (malformed JSON, missing ids, blocked/captcha/truncated
	// pages). Callers treat it as permanent for that document.
	ErrParse = errors.New("appstore: parse error")
)
