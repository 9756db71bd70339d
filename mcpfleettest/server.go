package mcpfleettest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
)

// Path is the path of the MCP endpoint of a [Server], the one path its
// port serves (health and metrics: Server.Handler().Admin(), Ready,
// Metrics).
const Path = "/mcp"

// shutdownTimeout bounds the drain of a Server at cleanup and Close.
const shutdownTimeout = 30 * time.Second

// ServerOptions configure [NewServer] and [StartServer]. The zero value
// is the all-in-one with its defaults.
type ServerOptions struct {
	// Handler configures the endpoint (frontend limits and timeouts,
	// auth, worker options, …; see mcpfleet.HandlerOptions). A nil Logger
	// logs the endpoint's warnings and errors: to tb.Log with NewServer,
	// to stderr with StartServer (the mcp.Server's own messages go to its
	// ServerOptions.Logger, by default slog.Default()).
	Handler mcpfleet.HandlerOptions
}

// Server is an MCP server under test, served by the all-in-one
// (mcpfleet.NewHandler: in-process bus, in-process worker, in-memory
// store — the code of `serve`) on a random loopback port.
type Server struct {
	// URL is the MCP endpoint, http://127.0.0.1:port/mcp.
	URL string

	h      *mcpfleet.Handler
	hs     *http.Server
	served chan struct{} // closed when hs.Serve returned
	once   sync.Once
	err    error
	onStop func() // stops the test logger
}

// NewServer serves srv until the end of the test: tb.Cleanup drains it
// (after the clients connected later, whose cleanups run first). It fails
// the test when the server cannot start. srv must not be served by
// another Handler at the same time: serving installs its events sink.
func NewServer(tb testing.TB, srv *mcp.Server, opts *ServerOptions) *Server {
	tb.Helper()
	o := ServerOptions{}
	if opts != nil {
		o = *opts
	}
	var tl *tbLog
	if o.Handler.Logger == nil {
		tl = &tbLog{tb: tb}
		o.Handler.Logger = slog.New(slog.NewTextHandler(tl, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := StartServer(ctx, srv, &o)
	if err != nil {
		tb.Fatalf("mcpfleettest: %v", err)
	}
	if tl != nil {
		s.onStop = tl.stop
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Logf("mcpfleettest: stopping the server: %v", err)
		}
	})
	return s
}

// StartServer is NewServer without a testing.TB (for examples and
// TestMain): the caller must Close the server. ctx bounds the start only.
func StartServer(ctx context.Context, srv *mcp.Server, opts *ServerOptions) (*Server, error) {
	if srv == nil {
		return nil, errors.New("mcpfleettest: StartServer needs an *mcp.Server")
	}
	o := ServerOptions{}
	if opts != nil {
		o = *opts
	}
	ho := o.Handler
	if ho.Logger == nil {
		ho.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	h, err := mcpfleet.NewHandler(ctx, srv, &ho)
	if err != nil {
		return nil, fmt.Errorf("starting the handler: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = h.Shutdown(context.Background())
		return nil, fmt.Errorf("listening: %w", err)
	}
	s := &Server{
		URL:    "http://" + ln.Addr().String() + Path,
		h:      h,
		hs:     &http.Server{Handler: h.Router(Path), ReadHeaderTimeout: 10 * time.Second},
		served: make(chan struct{}),
	}
	go func() {
		defer close(s.served)
		_ = s.hs.Serve(ln) // ends with Shutdown or Close, in Server.Close
	}()
	return s, nil
}

// Handler returns the running endpoint (e.g. for Ready, Metrics or
// Admin).
func (s *Server) Handler() *mcpfleet.Handler { return s.h }

// Connect returns a client of the server; see [Dial].
func (s *Server) Connect(tb testing.TB, opts *ClientOptions) *Client {
	tb.Helper()
	return Dial(tb, s.URL, opts)
}

// Close drains the server: requests in flight finish, listen streams get
// their final result, open streams close; then the in-process bus
// and the store stop. It waits at most 30 seconds, then closes what is
// left. It is idempotent and returns the first call's error.
func (s *Server) Close() error {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		s.h.Leave()
		herr := make(chan error, 1)
		go func() { herr <- s.hs.Shutdown(ctx) }() // waits for Handler.Shutdown to end the streams
		err := s.h.Shutdown(ctx)
		if e := <-herr; e != nil && !errors.Is(e, http.ErrServerClosed) {
			err = errors.Join(err, e)
			_ = s.hs.Close()
		}
		<-s.served
		if s.onStop != nil {
			s.onStop()
		}
		s.err = err
	})
	return s.err
}

// tbLog writes log lines to tb.Log until stop: nothing may be logged to
// a test after it ended.
type tbLog struct {
	mu      sync.Mutex
	tb      testing.TB
	stopped bool
}

func (l *tbLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.stopped {
		l.tb.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (l *tbLog) stop() {
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
}

var _ io.Writer = (*tbLog)(nil)
