package sessionstore

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// TestMain fails the run if goroutines of the stores, of go-redis or of
// the test helpers outlive the tests: every store must stop what it
// started when closed.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := waitForLeaks(5 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines left after the tests:\n\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// waitForLeaks returns the stacks of leaked goroutines still running after
// timeout, or "".
func waitForLeaks(timeout time.Duration) string {
	var leaked string
	testutil.WaitFor(timeout, func() bool {
		leaked = leakedGoroutines()
		return leaked == ""
	})
	return leaked
}

func leakedGoroutines() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var leaked []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "sessionstore.TestMain") || strings.Contains(g, "sessionstore.leakedGoroutines") {
			continue
		}
		if strings.Contains(g, "mcpfleet/pkg/sessionstore.") ||
			strings.Contains(g, "mcpfleet/internal/testutil.") ||
			strings.Contains(g, "github.com/redis/go-redis") {
			leaked = append(leaked, g)
		}
	}
	return strings.Join(leaked, "\n\n")
}
