//go:build unix

package main

import (
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"strconv"
	"strings"
)

// The discovery curve as a PNG (docs/scale.md): apps known with their
// lookup fields and apps enriched against virtual days, with the goal's
// lines: the catalogue's size, the 4-day discovery goal and the page
// host's floor. A plain image/png plotter with a 3×5 bitmap font for the
// axis labels: cmd/bench stays native and dependency-free.

const (
	plotW, plotH  = 900, 520
	plotL, plotR  = 70, 20 // margins
	plotT, plotB  = 40, 50
	fontScale     = 2 // each font pixel is this many image pixels
	glyphW, glyph = 3, 5
)

var (
	colBG      = color.RGBA{255, 255, 255, 255}
	colAxis    = color.RGBA{40, 40, 40, 255}
	colGrid    = color.RGBA{225, 225, 225, 255}
	colKnown   = color.RGBA{31, 119, 180, 255} // apps known with lookup fields
	colEnrich  = color.RGBA{44, 160, 44, 255}  // apps enriched
	colGoal    = color.RGBA{214, 39, 40, 255}  // the goals
	colFloor   = color.RGBA{255, 127, 14, 255} // the page host's floor
	colParsed  = color.RGBA{148, 103, 189, 255}
	glyphs3x5  = map[rune]string{}
	glyphsData = `0:111101101101111 1:010110010010111 2:111001111100111 3:111001111001111 4:101101111001001 5:111100111001111 6:111100111101111 7:111001001001001 8:111101111101111 9:111101111001111 .:000000000000010 k:100101110101101 K:101101110101101 M:101111111101101 d:001001111101111 a:000111101111101 y:101101111001111 s:000111110011110 p:000111101111100 e:000111111100111 n:000110101101101 r:000111100100100 i:010000010010010 c:000111100100111 h:100100111101101 o:000111101101111 w:000101101111111 l:010010010010010 u:000101101101111 g:111101111001111 f:011010111010010 t:010111010010011 x:000101010101101 -:000000111000000 /:001001010100100 (:010100100100010 ):010001001001010 =:000111000111000 +:000010111010000 ,:000000000010100 %:101001010100101`
)

func init() {
	for _, f := range strings.Fields(glyphsData) {
		glyphs3x5[[]rune(f)[0]] = f[2:]
	}
}

type canvas struct{ *image.RGBA }

func (c canvas) dot(x, y int, col color.Color) {
	if image.Pt(x, y).In(c.Bounds()) {
		c.Set(x, y, col)
	}
}

// line draws from (x0,y0) to (x1,y1), width w; dash > 0 skips every other
// dash pixels.
func (c canvas) line(x0, y0, x1, y1 float64, col color.Color, w, dash int) {
	n := int(math.Max(math.Abs(x1-x0), math.Abs(y1-y0))) + 1
	for i := 0; i <= n; i++ {
		if dash > 0 && (i/dash)%2 == 1 {
			continue
		}
		x := x0 + (x1-x0)*float64(i)/float64(n)
		y := y0 + (y1-y0)*float64(i)/float64(n)
		for dx := 0; dx < w; dx++ {
			for dy := 0; dy < w; dy++ {
				c.dot(int(x)+dx-w/2, int(y)+dy-w/2, col)
			}
		}
	}
}

// text writes s at (x,y) (top left) in the 3×5 font; unknown runes are
// blanks.
func (c canvas) text(x, y int, s string, col color.Color) {
	for _, r := range s {
		if g, ok := glyphs3x5[r]; ok {
			for i, b := range g {
				if b == '1' {
					for dx := 0; dx < fontScale; dx++ {
						for dy := 0; dy < fontScale; dy++ {
							c.dot(x+(i%glyphW)*fontScale+dx, y+(i/glyphW)*fontScale+dy, col)
						}
					}
				}
			}
		}
		x += (glyphW + 1) * fontScale
	}
}

func textWidth(s string) int { return len([]rune(s)) * (glyphW + 1) * fontScale }

// appsLabel is n as 100k, 1.1M.
func appsLabel(n float64) string {
	switch {
	case n >= 1e6:
		return strings.TrimRight(strings.TrimRight(ftoa(n/1e6, 2), "0"), ".") + "M"
	case n >= 1e3:
		return ftoa(n/1e3, 0) + "k"
	}
	return ftoa(n, 0)
}

func ftoa(f float64, prec int) string { return strconv.FormatFloat(f, 'f', prec, 64) }

// writeCurvePNG draws the curve: the samples' known-with-lookup, enriched
// and parsed counts against days, the catalogue's size, the 4-day goal and
// the page floor (and 1.1× it).
func writeCurvePNG(path string, curve []discoSample, apps int, floorDays float64) error {
	img := canvas{image.NewRGBA(image.Rect(0, 0, plotW, plotH))}
	for y := 0; y < plotH; y++ {
		for x := 0; x < plotW; x++ {
			img.Set(x, y, colBG)
		}
	}
	maxDay := math.Max(goalEnrichFactor*floorDays, goalDiscoveryDays)
	maxApps := float64(apps)
	for _, s := range curve {
		maxDay = math.Max(maxDay, s.Day)
		maxApps = math.Max(maxApps, float64(max(s.Known, s.Lookup)))
	}
	maxDay = math.Ceil(maxDay)
	maxApps *= 1.08
	px := func(day float64) float64 { return plotL + day/maxDay*float64(plotW-plotL-plotR) }
	py := func(n float64) float64 { return float64(plotH-plotB) - n/maxApps*float64(plotH-plotT-plotB) }

	// Grid and axes: a line a day, five app levels.
	for d := 0.0; d <= maxDay; d++ {
		img.line(px(d), py(0), px(d), py(maxApps), colGrid, 1, 0)
		l := ftoa(d, 0)
		img.text(int(px(d))-textWidth(l)/2, plotH-plotB+8, l, colAxis)
	}
	step := niceStep(maxApps / 5)
	for n := 0.0; n <= maxApps; n += step {
		img.line(px(0), py(n), px(maxDay), py(n), colGrid, 1, 0)
		l := appsLabel(n)
		img.text(plotL-8-textWidth(l), int(py(n))-glyph*fontScale/2, l, colAxis)
	}
	img.line(px(0), py(0), px(maxDay), py(0), colAxis, 2, 0)
	img.line(px(0), py(0), px(0), py(maxApps), colAxis, 2, 0)
	img.text(plotW/2-textWidth("days")/2, plotH-plotB+26, "days", colAxis)

	// The goals: the catalogue's size, 4 days, the floor and 1.1× it.
	img.line(px(0), py(float64(apps)), px(maxDay), py(float64(apps)), colGoal, 1, 6)
	img.line(px(goalDiscoveryDays), py(0), px(goalDiscoveryDays), py(maxApps), colGoal, 2, 6)
	img.line(px(floorDays), py(0), px(floorDays), py(maxApps), colFloor, 2, 6)
	img.line(px(goalEnrichFactor*floorDays), py(0), px(goalEnrichFactor*floorDays), py(maxApps), colFloor, 1, 4)
	// The page floor's line: pages at the host's capacity from day 0.
	img.line(px(0), py(0), px(floorDays), py(float64(apps)), colFloor, 1, 3)

	series := func(field func(discoSample) int, col color.Color) {
		for i := 1; i < len(curve); i++ {
			a, b := curve[i-1], curve[i]
			img.line(px(a.Day), py(float64(field(a))), px(b.Day), py(float64(field(b))), col, 3, 0)
		}
	}
	series(func(s discoSample) int { return s.Parsed }, colParsed)
	series(enrichedField, colEnrich)
	series(lookupField, colKnown)

	// Legend.
	x, y := plotL+16, plotT-28
	for _, e := range []struct {
		label string
		col   color.Color
	}{{"known (lookup)", colKnown}, {"enriched", colEnrich}, {"parsed", colParsed}, {"goal: 4 days", colGoal}, {"page floor", colFloor}} {
		img.line(float64(x), float64(y+5), float64(x+24), float64(y+5), e.col, 3, 0)
		img.text(x+30, y, e.label, colAxis)
		x += 30 + textWidth(e.label) + 24
	}

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// niceStep rounds a raw step up to 1, 2 or 5 × a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}
