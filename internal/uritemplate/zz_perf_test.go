package uritemplate

import (
	"strings"
	"testing"
	"time"
)

func TestPerfTmp(t *testing.T) {
	for _, tc := range []struct{ tmpl, uri string }{
		{strings.Repeat("{a}", 2000), strings.Repeat("x", 100000)},
		{strings.Repeat("{+a,b,c}", 500), strings.Repeat("x,", 50000)},
		{strings.Repeat("{?a}", 500), strings.Repeat("?a=", 30000)},
		{strings.Repeat("{a:3}", 1000), strings.Repeat("x", 100000)},
		{"{" + strings.Repeat("a,", 5000) + "a}", strings.Repeat("x,", 5000)},
	} {
		start := time.Now()
		tm, err := Parse(tc.tmpl)
		p := time.Since(start)
		if err != nil {
			t.Logf("parse err %v in %v", err, p)
			continue
		}
		start = time.Now()
		_, ok := tm.Match(tc.uri)
		t.Logf("parse %v match %v ok=%v", p, time.Since(start), ok)
	}
}
