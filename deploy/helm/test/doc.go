// Package helmtest tests the Helm chart in deploy/helm/mcpfleet: helm lint,
// helm template with default and non-default values, every rendered object
// decoded strictly against the Kubernetes API types, and every flag and
// MCPFLEET_* variable the chart passes checked against the -h output of the
// real binaries, built from this checkout.
//
// A module of its own, so the root module does not depend on the
// Kubernetes API packages. It needs helm (scripts/deps.sh installs v3.22.0).
package helmtest
