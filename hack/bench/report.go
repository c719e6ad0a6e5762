package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// figure is one row of the table.
type figure struct {
	Name  string  `json:"figure"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Target is the target ("<= 50"), empty if it gives none.
	Target string `json:"target,omitempty"`
	Met    *bool  `json:"met,omitempty"`
	// Error is set when the figure could not be measured (or was measured
	// with failures); Value is then not to be trusted.
	Error string `json:"error,omitempty"`
}

// header describes the machine and the run.
type header struct {
	Note     string `json:"note"`
	Load     string `json:"load"`
	CPUs     int    `json:"nproc"`
	MemTotal string `json:"mem_total"`
	Go       string `json:"go"`
	Date     string `json:"date"`
	Sync     string `json:"sync"`
	Commit   string `json:"commit,omitempty"`
	// LoadAvg is /proc/loadavg at the start and at the end: other work on
	// the machine shows there.
	LoadAvg  []string `json:"loadavg"`
	Duration string   `json:"duration,omitempty"`
}

type report struct {
	Header  header   `json:"header"`
	Figures []figure `json:"figures"`
}

func (r *report) add(name string, v float64, unit string) {
	r.Figures = append(r.Figures, figure{Name: name, Value: v, Unit: unit})
}

// atMost adds a figure whose target is a maximum.
func (r *report) atMost(name string, v float64, unit string, target float64) {
	met := v <= target
	r.Figures = append(r.Figures, figure{Name: name, Value: v, Unit: unit, Target: "<= " + strconv.FormatFloat(target, 'f', -1, 64), Met: &met})
}

// atLeast adds a figure whose target is a minimum.
func (r *report) atLeast(name string, v float64, unit string, target float64) {
	met := v >= target
	r.Figures = append(r.Figures, figure{Name: name, Value: v, Unit: unit, Target: ">= " + strconv.FormatFloat(target, 'f', -1, 64), Met: &met})
}

// fail records that name could not be measured, or had failures.
func (r *report) fail(name string, err error) {
	r.Figures = append(r.Figures, figure{Name: name, Unit: "error", Error: err.Error()})
}

// check records err, if any, against name; it returns whether err was nil.
func (r *report) check(name string, err error) bool {
	if err != nil {
		r.fail(name, err)
		return false
	}
	return true
}

// loadTargets are the optional targets of a load figure (0: none).
type loadTargets struct {
	MinPerSec, MaxCPUPerOpMs float64
}

// load adds the figures of one load run: throughput, p50 and p99 latency,
// kapi's CPU per operation, and its failures if it had any.
func (r *report) load(name string, res loadResult, t loadTargets) {
	if t.MinPerSec > 0 {
		r.atLeast(name+": throughput", res.PerSec(), "ops/s", t.MinPerSec)
	} else {
		r.add(name+": throughput", res.PerSec(), "ops/s")
	}
	r.add(name+": latency p50", percentile(res.Lat, 50), "ms")
	r.add(name+": latency p99", percentile(res.Lat, 99), "ms")
	if t.MaxCPUPerOpMs > 0 {
		r.atMost(name+": kapi CPU per op", res.CPUPerOpMs(), "ms", t.MaxCPUPerOpMs)
	} else {
		r.add(name+": kapi CPU per op", res.CPUPerOpMs(), "ms")
	}
	r.add(name+": load generator CPU per op", res.SelfCPUPerOpMs(), "ms")
	r.check(name, res.Err())
}

func (r *report) errors() int {
	n := 0
	for _, f := range r.Figures {
		if f.Error != "" {
			n++
		}
	}
	return n
}

func formatValue(v float64) string {
	switch a := max(v, -v); {
	case a == 0:
		return "0"
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

// print writes the header and the table (markdown, so it pastes into
// BENCHMARKS.md as it is).
func (r *report) print(w io.Writer) {
	h := r.Header
	fmt.Fprintf(w, "kapi benchmark — %s\n%s\n", h.Note, h.Load)
	fmt.Fprintf(w, "nproc %d, memory %s, %s, %s, kapi --sync=%s", h.CPUs, h.MemTotal, h.Go, h.Date, h.Sync)
	if h.Commit != "" {
		fmt.Fprintf(w, ", commit %s", h.Commit)
	}
	if h.Duration != "" {
		fmt.Fprintf(w, ", run time %s", h.Duration)
	}
	if len(h.LoadAvg) > 0 {
		fmt.Fprintf(w, "\nload average (1, 5, 15 min) at the start / end: %s", strings.Join(h.LoadAvg, " / "))
	}
	fmt.Fprint(w, "\n\n")

	rows := [][]string{{"figure", "value", "unit", "target", "met"}}
	for _, f := range r.Figures {
		met := ""
		if f.Met != nil {
			met = "met"
			if !*f.Met {
				met = "MISSED"
			}
		}
		value := formatValue(f.Value)
		if f.Error != "" {
			value, met = "ERROR", "ERROR: "+strings.ReplaceAll(firstLine(f.Error), "|", "/")
		}
		rows = append(rows, []string{f.Name, value, f.Unit, f.Target, met})
	}
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, c := range row {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	line := func(row []string) {
		var b strings.Builder
		b.WriteString("|")
		for i, c := range row {
			pad := widths[i] - len([]rune(c))
			if i == 1 { // numbers right-aligned
				fmt.Fprintf(&b, " %s%s |", strings.Repeat(" ", pad), c)
			} else {
				fmt.Fprintf(&b, " %s%s |", c, strings.Repeat(" ", pad))
			}
		}
		fmt.Fprintln(w, b.String())
	}
	line(rows[0])
	sep := make([]string, len(widths))
	for i, n := range widths {
		sep[i] = strings.Repeat("-", n)
	}
	line(sep)
	for _, row := range rows[1:] {
		line(row)
	}
	for _, f := range r.Figures {
		if f.Error != "" && strings.Contains(f.Error, "\n") {
			fmt.Fprintf(w, "\n%s: %s\n", f.Name, f.Error)
		}
	}
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

func (r *report) writeJSON(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
