package mcpfleet

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"
)

// The help groups, in the order -h prints them.
const (
	groupHTTP    = "HTTP endpoint"
	groupLimits  = "Limits"
	groupAuth    = "Authentication (OAuth 2.1 resource server)"
	groupBus     = "NATS and the session store"
	groupWorker  = "Worker"
	groupProgram = "This program"
	groupProcess = "Process and logging"
)

var groupOrder = []string{groupHTTP, groupLimits, groupAuth, groupBus, groupWorker, groupProgram, groupProcess}

// EnvName is the environment twin of a flag: --nats-url is
// MCPFLEET_NATS_URL.
func EnvName(flagName string) string {
	return "MCPFLEET_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// flags is a flag.FlagSet whose flags belong to help groups and have
// environment twins. The environment is applied after the command line,
// to the flags it did not set, so -h shows the built-in defaults and
// never a value taken from the environment (a secret, say).
type flags struct {
	fs     *flag.FlagSet
	group  map[string]string // flag name -> help group
	arg    map[string]string // flag name -> value placeholder in help
	secret map[string]bool   // never echo the value
	cur    string            // group of the flags being defined
}

func newFlags(name string) *flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse errors are returned, help printed by usage
	return &flags{fs: fs, group: map[string]string{}, arg: map[string]string{}, secret: map[string]bool{}}
}

func (f *flags) in(group string) *flags { f.cur = group; return f }

func (f *flags) add(name, arg string) {
	f.group[name] = f.cur
	f.arg[name] = arg
}

func (f *flags) str(p *string, name, def, arg, usage string) {
	f.fs.StringVar(p, name, def, usage)
	f.add(name, arg)
}

func (f *flags) secretStr(p *string, name, arg, usage string) {
	f.str(p, name, "", arg, usage)
	f.secret[name] = true
}

func (f *flags) dur(p *time.Duration, name string, def time.Duration, usage string) {
	f.fs.DurationVar(p, name, def, usage)
	f.add(name, "DURATION")
}

func (f *flags) boolean(p *bool, name string, usage string) {
	f.fs.BoolVar(p, name, false, usage)
	f.add(name, "")
}

// on defines a bool flag that is on by default (--name=false turns it
// off).
func (f *flags) on(p *bool, name string, usage string) {
	f.fs.BoolVar(p, name, true, usage)
	f.add(name, "")
}

func (f *flags) i64(p *int64, name string, def int64, usage string) {
	f.fs.Int64Var(p, name, def, usage)
	f.add(name, "N")
}

func (f *flags) list(p *[]string, name, usage string) {
	f.fs.Func(name, usage, func(s string) error {
		*p = splitList(s)
		return nil
	})
	f.add(name, "LIST")
}

// program registers the App's own flags in the program group; a flag
// that redefines a built-in one is an error, not a panic.
func (f *flags) program(register func(*flag.FlagSet)) (err error) {
	before := map[string]bool{}
	f.fs.VisitAll(func(fl *flag.Flag) { before[fl.Name] = true })
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("App.Flags: %v (the built-in flags of a role cannot be redefined)", p)
		}
	}()
	register(f.fs)
	f.fs.VisitAll(func(fl *flag.Flag) {
		if !before[fl.Name] {
			f.group[fl.Name] = groupProgram
			f.arg[fl.Name], _ = flag.UnquoteUsage(fl)
		}
	})
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parse parses args, then applies the environment twins of the flags the
// command line did not set (an empty variable counts as unset, except for
// a text flag, where empty may mean something). Errors name the flag or
// variable, and never quote a secret's value.
func (f *flags) parse(args []string) error {
	if err := f.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return f.explain(err)
	}
	if f.fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", f.fs.Args())
	}
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	var errs []error
	f.fs.VisitAll(func(fl *flag.Flag) {
		if set[fl.Name] {
			return
		}
		v, ok := os.LookupEnv(EnvName(fl.Name))
		if !ok || (v == "" && !isText(fl)) {
			return
		}
		if err := fl.Value.Set(v); err != nil {
			if f.secret[fl.Name] {
				errs = append(errs, fmt.Errorf("%s: invalid value", EnvName(fl.Name)))
			} else {
				errs = append(errs, fmt.Errorf("%s=%q: %v", EnvName(fl.Name), v, reason(fl, v, err)))
			}
		}
	})
	return errors.Join(errs...)
}

// isText reports whether fl holds a string.
func isText(fl *flag.Flag) bool {
	g, ok := fl.Value.(flag.Getter)
	if !ok {
		return false
	}
	_, text := g.Get().(string)
	return text
}

// reason says why v is not a value of fl, better than the flag package's
// "parse error".
func reason(fl *flag.Flag, v string, err error) error {
	g, ok := fl.Value.(flag.Getter)
	if !ok {
		return err
	}
	switch g.Get().(type) {
	case time.Duration:
		if _, perr := time.ParseDuration(v); perr != nil {
			return errors.New("want a duration such as 30s, 5m or 1h30m")
		}
	case int64, int:
		return errors.New("want a whole number")
	case bool:
		return errors.New("want true or false")
	}
	return err
}

// flagErrRE matches the flag package's error about a bad value.
var flagErrRE = regexp.MustCompile(`^invalid value "(.*)" for flag -([^:]+): (.*)$`)

// explain rewrites a flag package parse error: the flag as --name, a
// better reason, and no value for a secret.
func (f *flags) explain(err error) error {
	m := flagErrRE.FindStringSubmatch(err.Error())
	if m == nil {
		return errors.New(strings.Replace(err.Error(), "provided but not defined: -", "provided but not defined: --", 1))
	}
	name := m[2]
	if f.secret[name] {
		return fmt.Errorf("--%s: invalid value", name)
	}
	fl := f.fs.Lookup(name)
	if fl == nil {
		return err
	}
	return fmt.Errorf("--%s %q: %v", name, m[1], reason(fl, m[1], errors.New(m[3])))
}

// usage writes the flags by group, one line each, with their built-in
// defaults (secrets have none).
func (f *flags) usage(w io.Writer) {
	byGroup := map[string][]*flag.Flag{}
	width := 0
	f.fs.VisitAll(func(fl *flag.Flag) {
		g := f.group[fl.Name]
		byGroup[g] = append(byGroup[g], fl)
		width = max(width, len(fl.Name)+len(f.arg[fl.Name])+3)
	})
	for _, g := range groupOrder {
		fls := byGroup[g]
		if len(fls) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", g)
		for _, fl := range fls {
			left := "--" + fl.Name
			if a := f.arg[fl.Name]; a != "" {
				left += " " + a
			}
			_, usage := flag.UnquoteUsage(fl)
			if d := fl.DefValue; d != "" && d != "0" && d != "0s" && d != "false" && !f.secret[fl.Name] {
				usage += " (default " + d + ")"
			}
			fmt.Fprintf(w, "  %-*s  %s\n", width, left, usage)
		}
	}
}
