package alerts

import (
	"net/netip"
	"net/url"
	"strings"
)

// MaxURLLen bounds a webhook URL.
const MaxURLLen = 2048

// CheckWebhookURL refuses a webhook URL alerts may not be posted to: not
// https, or whose host is a private, loopback, link-local or unspecified
// address (RFC 1918, 127/8, 169.254/16, 100.64/10, 0/8, ::1, fe80::/10,
// fc00::/7, and IPv4 within IPv6) or a localhost name. allowLoopback
// (ALLOW_LOOPBACK_WEBHOOKS, `make dev` and the integration tests) lets a
// loopback host through, over http too. A name is judged as written: the
// Worker's fetch resolves it on Cloudflare's network, which reaches no
// private address of the operator's.
func CheckWebhookURL(raw string, allowLoopback bool) *FieldError {
	bad := func(msg string) *FieldError { return fieldErr("url", "%s", msg) }
	if len(raw) > MaxURLLen {
		return bad("url is at most 2048 characters")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return bad("url must be an absolute https URL")
	}
	if u.User != nil {
		return bad("url must not carry credentials before its host")
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	loopback := host == "localhost" || strings.HasSuffix(host, ".localhost")
	if addr, err := netip.ParseAddr(host); err == nil {
		addr = addr.Unmap()
		switch {
		case addr.IsLoopback():
			loopback = true
		case addr.IsPrivate(), addr.IsLinkLocalUnicast(), addr.IsLinkLocalMulticast(), addr.IsUnspecified(),
			addr.IsMulticast(), cgnat.Contains(addr), thisNetwork.Contains(addr):
			return bad("url points at a private address")
		}
	}
	if loopback {
		if !allowLoopback {
			return bad("url points at a loopback address")
		}
		if u.Scheme != "https" && u.Scheme != "http" {
			return bad("url must be http or https")
		}
		return nil
	}
	if u.Scheme != "https" {
		return bad("url must be https")
	}
	return nil
}

var (
	cgnat       = netip.MustParsePrefix("100.64.0.0/10")
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
)
