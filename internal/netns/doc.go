// Package netns builds, for a test, a network of "hosts" out of Linux
// network namespaces: one bridge in a namespace of its own, one veth pair
// per host (eth0 inside the host, a port of the bridge outside), an
// address per host in a private /24 that nothing else on the machine
// uses, loopback up everywhere, and one more veth giving the test process
// (the root namespace) an address on the bridge, so that it reaches every
// host and nothing else does. Processes run inside a host with Host.Start
// (`ip netns exec`, as testenv.Proc: logs, cleanup and exit checks as
// usual). Topology.Cut takes a host's bridge port down (a silent
// partition: no RST, no ICMP, packets vanish both ways), Heal brings it
// back; Netem impairs a host's traffic (loss, delay) and ClearNetem ends
// that.
//
// Everything a Topology creates is named after the test process (prefix
// "mfha", its pid, a counter) and removed at the test's cleanup, also
// when the test fails; New first removes what a crashed earlier test
// process left (namespaces and links of a pid that no longer runs, and
// the processes still inside them). It needs root, `ip` (iproute2) and,
// for Netem, `iptables`: a missing one fails the test with the command
// that installs it.
//
// Netem does not use tc's netem queueing discipline (sch_netem is not in
// every kernel: a kernel built without it, as some CI and VM kernels are,
// answers "Specified qdisc kind is unknown"). It queues the host's packets
// to the test process with iptables' NFQUEUE target and gives each its
// verdict there: dropped with the given probability, accepted after the
// given delay. The semantics are those of `tc qdisc add ... netem loss P%
// delay D` applied to each direction of the impaired traffic (so a round
// trip gets twice the delay).
package netns
