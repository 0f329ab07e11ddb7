module storecrawl

go 1.26

require (
	github.com/PuerkitoBio/goquery v1.10.3
	github.com/google/uuid v1.6.0
	github.com/syumai/workers v0.33.0
)

require (
	github.com/andybalholm/cascadia v1.3.3 // indirect
	golang.org/x/net v0.39.0 // indirect
)
