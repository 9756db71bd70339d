// Package deploytest tests deploy/ without a container engine: it reads
// deploy/compose.yaml (and the examples' compose overrides) the way
// docker compose does (interpolation from deploy/.env.example and the
// environment, merging of override files) and runs every service's own
// command line and environment with the real programs on loopback: the
// nats-server, redis-server and nginx the images run, and cmd/frontend and
// cmd/worker built from this checkout (with the Dockerfile's -ldflags) in
// place of the image's /usr/local/bin ones. Each replica is a "container"
// with an address of its own on 127.0.0.0/8, every port of a service is
// mapped to one free port on all of its replicas' addresses, and a small
// DNS server stands in for docker's (127.0.0.11), so nginx finds the
// frontends by their service name, as in compose. The healthchecks are
// run as written (the probe subcommand, wget, curl, redis-cli) with the
// same mapping. The images that do not run here (the observability
// profile's Prometheus, Grafana and Jaeger) are checked as written, and
// what they load with promtool: the configuration, the rules and their
// unit tests, the dashboard's queries; the metrics those name are
// checked against /metrics of a real `mcpfleet serve`.
package deploytest
