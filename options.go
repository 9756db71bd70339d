package mcpfleet

import "errors"

// ErrInvalidOptions is wrapped by every error about the options given to
// [RunServe], [RunFrontend], [RunWorker], [RunStdio] and [NewHandler]: a
// negative duration where none is meaningful, a path without a leading
// slash, a requestState key of the wrong size, no requestState key where
// one is required ([ErrNoStateKey] wraps it). Such an error comes before
// anything listens or connects. The options of the packages they embed
// (frontend.Options, worker.Options, stdio.Options, sessionstore.Options,
// auth.Options) are checked by those packages, with their own sentinels.
var ErrInvalidOptions = errors.New("mcpfleet: invalid options")

// optionsError is an options error whose message predates
// ErrInvalidOptions and is kept as it was: it wraps ErrInvalidOptions
// (and cause, when set) without naming it.
type optionsError struct {
	msg   string
	cause error
}

func (e *optionsError) Error() string { return e.msg }

func (e *optionsError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrInvalidOptions}
	}
	return []error{ErrInvalidOptions, e.cause}
}

// invalidOptions wraps err, an options error from another package, in
// ErrInvalidOptions with its message unchanged; nil stays nil.
func invalidOptions(err error) error {
	if err == nil {
		return nil
	}
	return &optionsError{msg: err.Error(), cause: err}
}
