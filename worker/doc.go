// Package worker is the Worker's wiring: the Go exports and handlers the
// shim calls (register_js.go), the clients over the bindings made once per
// instance (wiring_js.go), the cron dispatch (cron.go) and the list of hot
// queries every feature reads on its cron, queue and request paths. The
// features live in the packages below it; the Durable Objects' decisions in
// durable/.
package worker
