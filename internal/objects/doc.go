// Package objects is the vocabulary the Worker and its Durable Objects
// share: the outcome class of an upstream request or work item, the crawl
// target's name, and the writers' names in the ledger. It is a leaf (no
// project imports) so the Worker's platform packages can use it without
// pulling in a controller.
package objects
