package objects

// DefaultTarget is the one crawl target today (its EnrichmentController's name).
const DefaultTarget = "main"

// Source names, one per writer object in the ledger.
const (
	SourceControllerPrefix = "controller:"
	SourceLimiterPrefix    = "limiter:"
	SourceScheduler        = "scheduler:v1"
)
