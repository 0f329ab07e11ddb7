// Command scrape parses a saved App Store response offline and prints, as
// JSON, what the crawler would store from it. Operators use it when Apple
// changes a page; we use it to check the parsers against new captures.
//
//	go run ./cmd/scrape page [-rating-count N] FILE   a product page (either markup)
//	go run ./cmd/scrape chart FILE                    a top-chart feed (iTunes RSS or marketing-tools)
//	go run ./cmd/scrape lookup FILE                   an iTunes lookup or search body
//	go run ./cmd/scrape trim FILE                     a page without the parts no parser reads
//	go run ./cmd/scrape hints FILE                    a search-hints answer's terms
//
// FILE "-" reads standard input.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"storecrawl/worker/appstore"
)

const usage = `usage: scrape page [-rating-count N] FILE | chart FILE | lookup FILE | trim FILE | hints FILE
  page    prints format, subtitle, rating_share, rating_counts, similar_app_ids,
          in_app_purchases, missing_sections (and the page's own summary fields)
          rating_counts spreads -rating-count (the lookup's userRatingCount) or,
          without it, the page's own rating total; null when neither is known
  chart   prints the ranked entries
  lookup  prints the apps of a lookup or search body
  trim    prints the page without scripts (but JSON-LD and serialized-server-data),
          styles, <source> and <svg> elements: what fixtures keep
  hints   prints a search-hints answer's terms, in the answer's order
FILE "-" reads standard input.
`

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "scrape:", err)
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 || !slices.Contains([]string{"page", "chart", "lookup", "trim", "hints"}, args[0]) {
		fmt.Fprint(os.Stderr, usage)
		return flag.ErrHelp
	}
	fs := flag.NewFlagSet("scrape "+args[0], flag.ContinueOnError)
	ratingCount := fs.Int64("rating-count", -1, "the lookup's userRatingCount, spread over the page's rating shares")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fmt.Fprint(os.Stderr, usage)
		return flag.ErrHelp
	}
	body, err := readInput(fs.Arg(0), stdin)
	if err != nil {
		return err
	}
	var out any
	switch args[0] {
	case "page":
		p, err := appstore.ParseStorePage(body)
		if err != nil {
			return err
		}
		out = Page(p, *ratingCount)
	case "chart":
		if out, err = appstore.ParseChart(body); err != nil {
			return err
		}
	case "lookup":
		if out, err = appstore.ParseSearch(body); err != nil {
			return err
		}
	case "hints":
		hints, err := appstore.ParseHints(body)
		if err != nil {
			return err
		}
		terms := make([]string, len(hints))
		for i, h := range hints {
			terms[i] = h.Term
		}
		out = terms
	case "trim":
		_, err := stdout.Write(appstore.TrimPage(body))
		return err
	default:
		fmt.Fprint(os.Stderr, usage)
		return flag.ErrHelp
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

func readInput(name string, stdin io.Reader) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(name)
}

// PageOutput is what the crawler keeps from a page, under its contract's
// JSON keys (scripts and operators read them; keep them stable).
type PageOutput struct {
	Format          appstore.Format `json:"format"`
	Subtitle        string          `json:"subtitle"`
	RatingShare     [5]float64      `json:"rating_share"`
	RatingCounts    *[5]int64       `json:"rating_counts"`
	SimilarAppIDs   []int64         `json:"similar_app_ids"`
	InAppPurchases  []appstore.IAP  `json:"in_app_purchases"`
	MissingSections []string        `json:"missing_sections"`
	// The page's own summary (JSON-LD or server data), for comparison with
	// the lookup.
	Name          string  `json:"name"`
	RatingAverage float64 `json:"rating_average"`
	RatingTotal   int64   `json:"rating_total"`
	Price         float64 `json:"price"`
	Currency      string  `json:"currency"`
	Category      string  `json:"category"`
}

// Page turns a parsed page into the output; ratingCount < 0 means no lookup.
func Page(p appstore.StorePage, ratingCount int64) PageOutput {
	out := PageOutput{
		Format: p.Format, Subtitle: p.Subtitle, RatingShare: p.RatingShare,
		SimilarAppIDs: p.SimilarAppIDs, InAppPurchases: p.InAppPurchases, MissingSections: p.MissingSections,
		Name: p.Name, RatingAverage: p.RatingAverage, RatingTotal: p.RatingTotal,
		Price: p.Price, Currency: p.Currency, Category: p.Category,
	}
	total := ratingCount
	if total < 0 {
		total = p.RatingTotal
	}
	if total >= 0 || p.ExactCounts != nil {
		c := p.RatingCounts(total)
		out.RatingCounts = &c
	}
	return out
}
