// Command frontend runs an mcpfleet HTTP frontend: it holds client
// connections and streams and forwards every request over NATS to the
// workers; sessions live in Redis. Run any number behind a load balancer,
// no affinity needed. It has no handler code: any worker binary built
// with mcpfleet.Main serves behind it (and has this frontend role too).
package main

import "github.com/mcpfleet/mcpfleet"

func main() {
	(&mcpfleet.App{Name: "frontend", Default: "frontend"}).Main()
}
