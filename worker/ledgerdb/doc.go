// Package history is the D1 side of the Durable Objects' ledgers and what is
// read from it: the queue consumer that stores replicated facts exactly once
// (HandleFacts), reconciliation of the writers with D1 in bounded batches
// (ReconcileRun, ReconcilePage),
// the /v1/history view over per-minute rollups (BuildHistory), the pruning
// of raw facts past their retention (Prune), the dashboard's pipeline
// counts, and the dead letters of the EVENTS queue (RecordDeadLetters).
//
// Pure Go: D1 is reached through Store (D1Store over *d1.DB holds the SQL),
// the writer objects through LedgerReports, and the clock is passed in; the
// wasm wiring in worker/ supplies the clients.
package ledgerdb
