package compare

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	statsMu sync.Mutex
	starts  = map[string][]time.Duration{}
	suites  = map[string][]time.Duration{}
)

func recordStart(kind string, d time.Duration) {
	statsMu.Lock()
	starts[kind] = append(starts[kind], d)
	statsMu.Unlock()
}

func recordSuite(kind string, d time.Duration) {
	statsMu.Lock()
	suites[kind] = append(suites[kind], d)
	statsMu.Unlock()
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }

// TestMain prints the start-up and suite times per backend, and their ratios, after the
// tests (and writes them to $COMPARE_REPORT if set).
func TestMain(m *testing.M) {
	code := m.Run()
	statsMu.Lock()
	defer statsMu.Unlock()
	if len(starts) == 0 {
		os.Exit(code)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| backend | starts | median start per test | median suite wall time (%d lock tests) |\n|---|---|---|---|\n", len(lockCases))
	for _, k := range []string{"tumbler", "miniredis"} {
		if len(starts[k]) == 0 {
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s (%d runs) |\n", k, len(starts[k]), ms(median(starts[k])),
			ms(median(suites[k])), len(suites[k]))
		for _, n := range []int{1, 3} {
			if d := starts[fmt.Sprintf("%s, %d node(s)", k, n)]; len(d) > 0 {
				fmt.Fprintf(&b, "| %s, %d node(s) | %d | %s | |\n", k, n, len(d), ms(median(d)))
			}
		}
	}
	if t, mr := median(starts["tumbler"]), median(starts["miniredis"]); t > 0 && mr > 0 {
		fmt.Fprintf(&b, "\nstart-up ratio tumbler/miniredis: %.1fx; suite ratio: %.2fx\n",
			float64(t)/float64(mr), float64(median(suites["tumbler"]))/float64(median(suites["miniredis"])))
	}
	fmt.Print("\n", b.String())
	if p := os.Getenv("COMPARE_REPORT"); p != "" {
		_ = os.WriteFile(p, []byte(b.String()), 0o644)
	}
	os.Exit(code)
}
