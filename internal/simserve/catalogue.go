package simserve

// CatalogueApp is one app of cmd/upstream-sim's GET /__catalogue answer:
// the values its lookups and searches serve for it, which tests compare
// with what the crawler stored and cmd/bench -only-scale writes into a
// local D1 filled to the same catalogue. One type for both sides of that
// contract.
type CatalogueApp struct {
	ID            int64   `json:"id"`
	RatingCount   int64   `json:"rating_count"`
	AverageRating float64 `json:"average_rating"`
	Version       string  `json:"version"`
	// What a local D1 filled to the catalogue stores (cmd/bench -only-scale).
	Name           string  `json:"name"`
	Price          float64 `json:"price"`
	GenreID        int     `json:"genre_id"`
	Genre          string  `json:"genre"`
	DeveloperID    int64   `json:"developer_id"`
	DeveloperName  string  `json:"developer_name"`
	UpdatedDate    string  `json:"updated_date"`
	ReleaseNotes   string  `json:"release_notes"`
	DescriptionLen int     `json:"description_len"`
}
