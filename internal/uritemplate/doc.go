// Package uritemplate implements RFC 6570 URI templates for string values:
// parsing, expansion (all four levels) and the reverse, matching a concrete
// URI against a template to recover the variable values. MCP resource
// templates use it to route a resources/read request to the template that
// produced the URI.
//
// # Expansion
//
// [Template.Expand] follows RFC 6570 section 3 for string values, with every
// operator (none, +, #, ., /, ;, ?, &) and the prefix modifier :N. A
// variable missing from the map is undefined and expands to nothing; the
// empty string is defined. The explode modifier * has no effect on a string
// value (RFC 6570 section 2.4.2), so it is accepted and ignored.
//
// # Matching
//
// [Template.Match] runs a regular expression compiled once by [Parse] and
// anchored at both ends. The rules:
//
//   - Literal text must match exactly (after the percent-encoding RFC 6570
//     applies to literals that are not allowed in a URI).
//   - {var} matches one or more characters other than '/', '?' and '#';
//     within a multi-variable expression such as {x,y} also not ','.
//   - {+var} and {#var} match one or more (for #: zero or more, after the
//     '#') characters of any kind, so they may span '/', '?' and '#'. In a
//     multi-variable expression each value stops at ','.
//   - {/var} matches "/segment", {.var} matches ".label": the segment
//     excludes '/', '?', '#' and the operator's separator, and may be
//     empty. The whole expression is optional, since undefined variables
//     expand to nothing.
//   - {;x,y}, {?x,y} and {&x} match parameters in any order, each optional,
//     each at most once; a parameter whose name is not declared by the
//     template makes the match fail. Adjacent {?…}{&…} expressions form one
//     query. "?x" without "=" is read as x="".
//   - In a multi-variable expression values are assigned from left to
//     right: with {x,y}, "a" gives x="a" and leaves y undefined.
//   - When the split between variables is ambiguous (for example {a}-{b}
//     against "x-y-z", or {name}{.ext} against "a.b.c") the earlier
//     variable takes the shortest match that lets the rest of the template
//     match: a="x", b="y-z"; name="a.b", ext="c". In the common case this is
//     the same as stopping a variable at the first character of the literal
//     that follows it, but it never rejects a URI that some split accepts.
//   - Matched values are percent-decoded (a '+' stays a '+'). Invalid
//     percent-encoding makes the match fail. A variable that occurs more
//     than once must have the same value everywhere (a prefix occurrence
//     {var:N} must be the first N characters of it), and a value matched by
//     {var:N} may be at most N characters long.
//
// Match inverts Expand for values that do not make the split ambiguous,
// with one exception inherited from RFC 6570: + and # expansion copy "%XX"
// sequences in a value unchanged, so such a value comes back decoded.
//
// Matching needs no backtracking (Go's regexp runs in linear time in the
// length of the URI), so it is safe on untrusted input.
//
// Concurrency: a [Template] is immutable after [Parse] and safe for
// concurrent use.
package uritemplate
