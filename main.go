package mcpfleet

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/mcpfleet/mcpfleet/internal/gctune"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
)

// Version is mcpfleet's version. Release builds stamp it:
// go build -ldflags "-X github.com/mcpfleet/mcpfleet.Version=v1.2.3".
var Version = "0.1.0"

// Main is a server program's whole main: it runs srv in the role the
// first argument names (serve, the default; worker; frontend; stdio;
// version; help), with the flags and environment twins of that role,
// until SIGINT or SIGTERM, and then drains. It exits with status 0 after
// a clean stop or -h, 1 when running failed and 2 on a usage error.
func Main(srv *mcp.Server) {
	(&App{Server: srv}).Main()
}

// App is a command-line program built on mcpfleet: [Main] with more
// choices. The zero value with Server set is what Main runs.
type App struct {
	// Name is the program's name in usage and error messages; empty
	// means the base name of os.Args[0].
	Name string
	// Server is what serve, worker and stdio serve. Nil (with NewServer
	// nil too): the program has only the frontend role.
	Server *mcp.Server
	// NewServer, when set, builds the server once the flags are parsed
	// and logging is set up (slog.Default is the process logger by then),
	// in place of Server. It may read the flags Flags registered.
	NewServer func() (*mcp.Server, error)
	// Flags, when set, registers the program's own flags on the roles
	// that run handlers (serve, worker, stdio). Each gets an environment
	// twin like the built-in flags (--my-flag is MCPFLEET_MY_FLAG) and is
	// listed under "This program" by -h.
	Flags func(fs *flag.FlagSet)
	// Default is the role run when the first argument names none; empty
	// means serve, or frontend when the program has no server.
	Default string
	// Commands are more subcommands, listed by help after the roles.
	Commands []Command
	// Version is the program's version, printed by `version`; empty
	// means the Server's serverInfo version (none with NewServer).
	Version string
	// Close, when set, is called once the role has stopped (after the
	// drain), to release what NewServer opened; an error makes the exit
	// status 1.
	Close func() error
	// Stdin, Stdout and Stderr are the process's when nil. Stdio serves
	// the protocol on Stdin and Stdout; logs and errors go to Stderr;
	// help and version go to Stdout.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Command is a subcommand of an App.
type Command struct {
	// Name is the first argument that runs it; Summary its line in help.
	Name, Summary string
	// Run runs the command with the arguments after its name and
	// returns the exit status. ctx ends on SIGINT or SIGTERM.
	Run func(ctx context.Context, args []string) int
}

var roleSummary = []struct {
	r       role
	summary string
}{
	{roleServe, "the all-in-one: frontend, worker, embedded NATS and an in-memory session store in one process"},
	{roleWorker, "a worker of a cluster: runs this program's tools, prompts and resources for the frontends, over NATS"},
	{roleFrontend, "an HTTP frontend of a cluster: holds client connections and streams, forwards requests to the workers; sessions in Redis"},
	{roleStdio, "serve one client over stdin/stdout (for clients that start the server as a subprocess)"},
}

// Main runs the program with os.Args until SIGINT or SIGTERM and exits
// with Run's status. The first signal starts the drain; a second one
// ends the process at once (status 1), whatever the drain still waits
// for.
func (a *App) Main() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // lives as long as the process
		<-sigs
		cancel()
		<-sigs
		_, stderr := a.out()
		fmt.Fprintf(stderr, "%s: a second signal: exiting without finishing the drain\n", a.name())
		os.Exit(1)
	}()
	code := a.Run(ctx, os.Args[1:])
	cancel()
	os.Exit(code)
}

// Run runs the program with args (without the program name) until ctx
// ends, and returns the exit status: 0 after a clean stop or help, 1
// when running failed, 2 on a usage error (a bad flag, a missing
// requestState key). A role sets slog.Default to the process logger its
// flags describe.
func (a *App) Run(ctx context.Context, args []string) int {
	stdout, stderr := a.out()
	name := a.name()
	cmd := a.defaultRole()
	if len(args) > 0 {
		switch args[0] {
		case "help":
			if len(args) > 1 {
				return a.Run(ctx, []string{args[1], "-h"})
			}
			a.usage(stdout)
			return 0
		case "-h", "-help", "--help":
			if a.Default != "" {
				// A binary run for one role (worker, frontend): its flags.
				return a.Run(ctx, []string{a.Default, "-h"})
			}
			a.usage(stdout)
			return 0
		case "probe":
			return a.runProbe(ctx, args[1:])
		case "version", "--version", "-version":
			v := name
			switch {
			case a.Version != "":
				v += " " + a.Version
			case a.Server != nil:
				v += " " + a.Server.Info().Version
			}
			fmt.Fprintf(stdout, "%s (mcpfleet %s, %s)\n", v, Version, runtime.Version())
			return 0
		}
		if !strings.HasPrefix(args[0], "-") {
			cmd, args = args[0], args[1:]
		}
	}
	for _, c := range a.Commands {
		if c.Name == cmd {
			return c.Run(ctx, args)
		}
	}
	switch r := role(cmd); r {
	case roleServe, roleFrontend, roleWorker, roleStdio:
		return a.runRole(ctx, r, args)
	}
	fmt.Fprintf(stderr, "%s: unknown command %q (run '%s help')\n", name, cmd, name)
	return 2
}

func (a *App) runRole(ctx context.Context, r role, args []string) int {
	stdout, stderr := a.out()
	name := a.name() + " " + string(r)
	if string(r) == a.Default {
		name = a.name() // "worker: …", not "worker worker: …"
	}
	c := &config{}
	f := newFlags(name)
	if err := c.define(r, f, a.Flags); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	if err := f.parse(args); errors.Is(err, flag.ErrHelp) {
		a.roleUsage(stdout, r, f)
		return 0
	} else if err != nil {
		fmt.Fprintf(stderr, "%s: %v\nrun '%s -h' for the flags\n", name, err, name)
		return 2
	}
	if err := c.validate(r); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	log := c.logger(stderr)
	slog.SetDefault(log)
	if c.ID == "" {
		c.ID = randomID() // also the tracing's service.instance.id
	}
	tracing, err := startTracing(ctx, r, c.ID, a.programVersion(), log)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	defer stopTracing(tracing, log) // at the end of the drain: the last spans are exported
	c.tracerProvider = tracing.TracerProvider()
	var srv *mcp.Server
	if r.handlers() {
		var err error
		if srv, err = a.server(); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return 1
		}
		if srv == nil {
			fmt.Fprintf(stderr, "%s: this program has no MCP server: its only role is frontend\n", name)
			return 2
		}
		if a.Close != nil {
			defer func() {
				if err := a.Close(); err != nil {
					fmt.Fprintf(stderr, "%s: closing: %v\n", name, err)
				}
			}()
		}
		// A worker on an external NATS must share its key with the other
		// workers: a usage error, before anything connects.
		shared := r == roleWorker || (r == roleServe && c.NATSURL != "")
		if shared && c.stateKey == nil && !srv.StateKeyConfigured() {
			fmt.Fprintf(stderr, "%s: %v\n", name, ErrNoStateKey)
			return 2
		}
	}
	if r.bus() {
		defer startPprof(c.PprofListen, log)()
		defer gctune.Start(gctune.Options{Headroom: c.GCHeadroom, IdleRelease: c.GCIdleRelease}).Stop()
	}
	switch r {
	case roleServe:
		err = RunServe(ctx, srv, c.serveOptions(log))
	case roleFrontend:
		err = RunFrontend(ctx, c.serveOptions(log))
	case roleWorker:
		err = RunWorker(ctx, srv, c.workerOptions(log))
	case roleStdio:
		o := c.stdioOptions(log)
		o.In, o.Out = a.Stdin, stdout
		err = RunStdio(ctx, srv, o)
	}
	if err != nil && ctx.Err() != nil {
		// Stopped (a signal) while starting or at the end of stdio: a
		// clean stop, whatever the start was doing.
		if !errors.Is(err, context.Canceled) {
			log.Warn("stopped while starting", "err", err)
		}
		err = nil
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

func (a *App) server() (*mcp.Server, error) {
	if a.NewServer != nil {
		return a.NewServer()
	}
	return a.Server, nil
}

func (a *App) hasServer() bool { return a.Server != nil || a.NewServer != nil }

func (a *App) name() string {
	if a.Name != "" {
		return a.Name
	}
	return filepath.Base(os.Args[0])
}

func (a *App) defaultRole() string {
	switch {
	case a.Default != "":
		return a.Default
	case a.hasServer():
		return string(roleServe)
	}
	return string(roleFrontend)
}

func (a *App) out() (stdout, stderr io.Writer) {
	stdout, stderr = a.Stdout, a.Stderr
	if stdout == nil {
		stdout = os.Stdout
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	return stdout, stderr
}

// usage lists the commands.
func (a *App) usage(w io.Writer) {
	name := a.name()
	fmt.Fprintf(w, "Usage: %s [command] [flags]\n\nCommands:\n", name)
	for _, s := range roleSummary {
		if !a.hasServer() && s.r.handlers() {
			continue
		}
		def := ""
		if string(s.r) == a.defaultRole() {
			def = " (default)"
		}
		fmt.Fprintf(w, "  %-9s  %s%s\n", s.r, s.summary, def)
	}
	for _, c := range a.Commands {
		fmt.Fprintf(w, "  %-9s  %s\n", c.Name, c.Summary)
	}
	fmt.Fprintf(w, "  %-9s  %s\n", "probe", "check a running process's readiness (or liveness) on its admin listener: a healthcheck")
	fmt.Fprintf(w, "  %-9s  %s\n", "version", "print the version")
	fmt.Fprintf(w, "\nRun '%s COMMAND -h' for a command's flags. Every flag has an environment twin:\n--nats-url is %s; flags win over the environment.\n", name, EnvName("nats-url"))
}

// roleUsage describes one role and its flags.
func (a *App) roleUsage(w io.Writer, r role, f *flags) {
	if string(r) == a.defaultRole() {
		fmt.Fprintf(w, "Usage: %s [%s] [flags]\n\n", a.name(), r)
	} else {
		fmt.Fprintf(w, "Usage: %s %s [flags]\n\n", a.name(), r)
	}
	for _, s := range roleSummary {
		if s.r == r {
			fmt.Fprintf(w, "Runs %s.\n", s.summary)
		}
	}
	fmt.Fprintf(w, "Every flag has an environment twin (--log-level is %s); flags win over it.\n", EnvName("log-level"))
	f.usage(w)
	if string(r) == a.Default {
		fmt.Fprintf(w, "\nRun '%s help' for the program's other commands.\n", a.name())
	}
}
