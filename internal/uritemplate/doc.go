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
//   - {+var} matches one or more characters of any kind, and {#var} a '#'
//     followed by zero or more, so both may span '/', '?' and '#'. In a
//     multi-variable expression each value stops at ','.
//   - {/var} matches "/segment" and {.var} matches ".label": the value
//     excludes '/', '?', '#' and the operator's own separator (so a label
//     never contains '.'), and may be empty. The whole expression is
//     optional, since undefined variables expand to nothing.
//   - {;x,y}, {?x,y} and {&x} match parameters in any order, each optional,
//     each at most once; a parameter whose name the expression does not
//     declare makes the match fail. Adjacent {?…}{&…} expressions form one
//     query, which may start with '?' or '&'. "?x" without "=" reads as
//     x="".
//   - In a multi-variable expression values are assigned from left to
//     right: with {x,y}, "a" gives x="a" and leaves y undefined.
//   - When the split between variables is ambiguous (for example {a}-{b}
//     against "x-y-z", or {name}{.ext} against "a.b.c") the earlier
//     variable takes the shortest match that lets the rest of the template
//     match: a="x", b="y-z"; name="a.b", ext="c". This is the same as
//     stopping a variable at the first character of the literal that
//     follows it whenever that split works, but falls back to a longer
//     value instead of rejecting the URI when it does not.
//   - A value is matched as a sequence of characters and whole "%XX"
//     triplets, so a split never cuts a triplet and invalid
//     percent-encoding never matches. Matched values are percent-decoded;
//     '+' stays '+'.
//   - Two constraints are checked after the expression has chosen its
//     split, so a URI that only another split would satisfy is rejected: a
//     variable that occurs more than once must have the same value
//     everywhere (a prefix occurrence {var:N} must be its first N
//     characters), and a value matched by {var:N} may be at most N
//     characters long. For example {y}{x:3} does not match "abcdef",
//     because y takes "a" first.
//
// Match inverts Expand for values that do not make the split ambiguous,
// with one exception inherited from RFC 6570: + and # expansion copy "%XX"
// sequences in a value unchanged, so such a value comes back decoded.
//
// URIs longer than [MaxURILength] never match, and templates are limited to
// [MaxTemplateLength] bytes and [MaxVarspecs] variable occurrences; within
// those bounds a match takes time linear in the length of the URI (Go's
// regexp does not backtrack), so Match is safe on untrusted input.
//
// Concurrency: a [Template] is immutable after [Parse] and safe for
// concurrent use.
package uritemplate
