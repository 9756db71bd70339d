package loadgen

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
)

// Chart geometry, in SVG user units (pixels).
const (
	chartWidth   = 980
	chartTop     = 64  // title and legend
	panelHeight  = 300 // one bar chart, axis labels included
	panelGap     = 40
	plotLeft     = 90 // room for the y axis labels and title
	plotRight    = 20
	plotTop      = 30 // room for the panel title
	plotBottom   = 50 // room for the configuration names
	barWidth     = 42
	legacyColour = "#4e79a7"
	modernColour = "#f28e2b"
)

// chartMetric is one of the two bar charts.
type chartMetric struct {
	title string
	unit  string
	value func(*Result) (float64, bool)
}

// WriteSVG writes the load runs at o.Concurrency as a plain SVG: two
// grouped bar charts, req/s and server CPU µs per request, with one group
// per configuration of o.ChartLabels and one bar per protocol (legacy,
// modern), each with its value; "n/a" where a configuration was not
// measured.
func (r *Records) WriteSVG(w io.Writer, o ReportOptions) error {
	o.defaults()
	metrics := []chartMetric{
		{title: fmt.Sprintf("Throughput at c=%d (higher is better)", o.Concurrency), unit: "req/s",
			value: func(x *Result) (float64, bool) { return x.RPS, x.OK > 0 }},
		{title: fmt.Sprintf("Server CPU per request at c=%d (lower is better; a cluster's processes summed)", o.Concurrency), unit: "CPU µs/request",
			value: cpuPerReq},
	}
	height := chartTop + len(metrics)*panelHeight + (len(metrics)-1)*panelGap + 30
	var b bytes.Buffer
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", chartWidth, height, chartWidth, height)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="white"/>`+"\n", chartWidth, height)
	text(&b, chartWidth/2, 24, "middle", 16, "bold", fmt.Sprintf("mcpfleet bench: echo tool, c=%d, one run on one machine (compare ratios, not runs)", o.Concurrency))
	// Legend.
	lx := chartWidth/2 - 130
	fmt.Fprintf(&b, `<rect x="%d" y="38" width="14" height="14" fill="%s"/>`+"\n", lx, legacyColour)
	text(&b, lx+20, 50, "start", 12, "", "legacy (2025-11-25, sessions)")
	fmt.Fprintf(&b, `<rect x="%d" y="38" width="14" height="14" fill="%s"/>`+"\n", lx+200, modernColour)
	text(&b, lx+220, 50, "start", 12, "", "modern (2026-07-28)")
	for i, m := range metrics {
		r.panel(&b, o, m, chartTop+i*(panelHeight+panelGap))
	}
	text(&b, 10, height-10, "start", 10, "", "CPU: the server processes' CPU time (utime+stime) over the measured window / successful requests. n/a: not measured.")
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

// panel draws one grouped bar chart with its top at y0.
func (r *Records) panel(b *bytes.Buffer, o ReportOptions, m chartMetric, y0 int) {
	protos := []Proto{Legacy, Modern}
	colours := []string{legacyColour, modernColour}
	type bar struct {
		v  float64
		ok bool
	}
	vals := make([][]bar, len(o.ChartLabels))
	maxV := 0.0
	for i, label := range o.ChartLabels {
		vals[i] = make([]bar, len(protos))
		for j, p := range protos {
			if x := r.find(label, p, o.Concurrency); x != nil {
				if v, ok := m.value(x); ok {
					vals[i][j] = bar{v, true}
					maxV = math.Max(maxV, v)
				}
			}
		}
	}
	top, step := niceScale(maxV, 5)
	px0, px1 := plotLeft, chartWidth-plotRight
	py0, py1 := y0+plotTop, y0+panelHeight-plotBottom // top and bottom of the plot area
	yOf := func(v float64) float64 { return float64(py1) - v/top*float64(py1-py0) }

	text(b, px0, y0+16, "start", 13, "bold", m.title)
	// Grid lines and y tick labels.
	for v := 0.0; v <= top+step/2; v += step {
		y := yOf(v)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#dddddd"/>`+"\n", px0, y, px1, y)
		text(b, px0-6, int(math.Round(y))+4, "end", 11, "", groupThousands(v))
	}
	// Axes.
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", px0, py0, px0, py1)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", px0, py1, px1, py1)
	// The y axis title, rotated.
	cy := (py0 + py1) / 2
	fmt.Fprintf(b, `<text x="18" y="%d" text-anchor="middle" font-size="12" transform="rotate(-90 18 %d)">%s</text>`+"\n", cy, cy, esc(m.unit))
	// The groups.
	gw := float64(px1-px0) / float64(len(o.ChartLabels))
	for i, label := range o.ChartLabels {
		gx := float64(px0) + gw*float64(i)
		start := gx + (gw-float64(barWidth*len(protos)))/2
		for j := range protos {
			x := start + float64(barWidth*j)
			bv := vals[i][j]
			if !bv.ok {
				text(b, int(x+barWidth/2), py1-6, "middle", 10, "", "n/a")
				continue
			}
			y := yOf(bv.v)
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%s %s: %s %s</title></rect>`+"\n",
				x+2, y, barWidth-4, float64(py1)-y, colours[j], esc(label), protos[j], groupThousands(bv.v), esc(m.unit))
			text(b, int(x+barWidth/2), int(math.Round(y))-4, "middle", 10, "", groupThousands(bv.v))
		}
		text(b, int(gx+gw/2), py1+18, "middle", 12, "", label)
	}
	// The x axis title.
	text(b, (px0+px1)/2, py1+38, "middle", 11, "", "configuration")
}

// text writes one <text> element with its content escaped.
func text(b *bytes.Buffer, x, y int, anchor string, size int, weight, s string) {
	fw := ""
	if weight != "" {
		fw = ` font-weight="` + weight + `"`
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="%s" font-size="%d"%s>%s</text>`+"\n", x, y, anchor, size, fw, esc(s))
}

func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// niceScale returns the top of an axis from 0 that holds max with about n
// ticks of a 1, 2 or 5 times a power of ten, and the tick step.
func niceScale(max float64, n int) (top, step float64) {
	if max <= 0 || math.IsNaN(max) || math.IsInf(max, 0) {
		return 1, 0.2
	}
	raw := max / float64(n)
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if step = m * pow; step >= raw {
			break
		}
	}
	top = math.Ceil(max/step) * step
	if top < max*1.05 { // room for the value above the tallest bar
		top += step
	}
	return top, step
}

// groupThousands formats v rounded, with commas between thousands
// (below 10, with one decimal when it has one).
func groupThousands(v float64) string {
	if v < 10 && v != math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	neg := ""
	if s[0] == '-' {
		neg, s = "-", s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return neg + s
}
