// Package browser drives mcpfleet from a real browser: headless Chromium
// (Debian's chromium, installed by make deps) loads a page of another
// origin that talks to the endpoint with fetch, in both protocol eras, on
// the all-in-one and through nginx to the cluster; the same page from an
// origin outside --allowed-origins is refused.
package browser

import (
	"context"
	_ "embed"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mcpfleet/mcpfleet/internal/testenv"
)

//go:embed testdata/page.html
var page []byte

// result is what the page leaves in window.__result.
type result struct {
	Error             string `json:"error"`
	SessionIDReadable bool   `json:"sessionIdReadable"`
	Negotiated        string `json:"negotiated"`
	Progress          int    `json:"progress"`
	LegacyResult      string `json:"legacyResult"`
	ModernResult      string `json:"modernResult"`
	Updated           bool   `json:"updated"`
}

// servePage serves the page on a loopback port of its own: an origin of
// its own (http://127.0.0.1:PORT).
func servePage(t *testing.T) string {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// newBrowser starts headless Chromium; its tabs are children of the
// returned context.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	bin := testenv.FindBinary(t, "chromium", "apt-get install chromium (or run `make deps`)")
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(bctx); err != nil { // starts the browser
		t.Fatalf("starting %s: %v", bin, err)
	}
	return bctx
}

// visit loads the page from pageOrigin, pointed at the endpoint mcpURL, in
// a new tab, and returns what it found.
func visit(t *testing.T, browser context.Context, pageOrigin, mcpURL string) result {
	t.Helper()
	tab, cancel := chromedp.NewContext(browser)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(tab, 90*time.Second) // a hang guard
	defer cancelTimeout()
	err := chromedp.Do(ctx, chromedp.Navigate(pageOrigin+"/?mcp="+url.QueryEscape(mcpURL)))
	var res result
	if err == nil {
		res, err = chromedp.Run(ctx, chromedp.Poll[result](`window.__result`,
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(60*time.Second)))
	}
	if err != nil {
		logText, _ := chromedp.Run(tab, chromedp.TextContent(chromedp.ID("log")))
		t.Fatalf("the page at %s: %v (its log: %q)", pageOrigin, err, logText)
	}
	return res
}

func TestBrowser(t *testing.T) {
	allowed, other := servePage(t), servePage(t)
	originArgs := []string{"--allowed-origins", allowed}
	_, aio := testenv.StartMCPFleet(t, append([]string{"--fixture", "conformance"}, originArgs...)...)
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 2, Nginx: true, FrontendArgs: originArgs})
	browser := newBrowser(t)
	for name, mcpURL := range map[string]string{"all-in-one": aio, "cluster behind nginx": c.ProxyURL} {
		t.Run(name, func(t *testing.T) {
			got := visit(t, browser, allowed, mcpURL)
			if got.Error != "" {
				t.Fatalf("the page from an allowed origin failed: %s", got.Error)
			}
			if !got.SessionIDReadable || got.Negotiated != "2025-11-25" {
				t.Errorf("initialize: session id readable %v, negotiated %q", got.SessionIDReadable, got.Negotiated)
			}
			if got.LegacyResult != "slept" || got.Progress < 1 {
				t.Errorf("2025-11-25 tools/call: result %q after %d progress notifications", got.LegacyResult, got.Progress)
			}
			if got.ModernResult != "hi from the browser" {
				t.Errorf("2026-07-28 tools/call: %q", got.ModernResult)
			}
			if !got.Updated {
				t.Error("the listen stream heard no resources/updated")
			}

			refused := visit(t, browser, other, mcpURL)
			if refused.Error == "" || !strings.Contains(refused.Error, "Failed to fetch") {
				t.Errorf("the page from %s, outside the list: %+v; want its fetch refused", other, refused)
			}
		})
	}
}
