package mcpfleet

import (
	"runtime"
	"runtime/debug"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Collectors of what the binaries' clients know, read at each scrape:
// the NATS connection's statistics and the Redis store's pool; and the
// build's identity.

// natsCollector reads a NATS connection's statistics (nats.Conn.Stats)
// and state at scrape time.
type natsCollector struct {
	nc                             *nats.Conn
	msgs, bytes, reconn, connected *prometheus.Desc
}

func newNATSCollector(nc *nats.Conn) *natsCollector {
	return &natsCollector{
		nc: nc,
		msgs: prometheus.NewDesc("mcpfleet_nats_messages_total",
			"Messages this process's NATS connection received (in) and sent (out).", []string{"direction"}, nil),
		bytes: prometheus.NewDesc("mcpfleet_nats_bytes_total",
			"Payload bytes this process's NATS connection received (in) and sent (out).", []string{"direction"}, nil),
		reconn: prometheus.NewDesc("mcpfleet_nats_reconnects_total",
			"Times this process's NATS connection was made again after a loss.", nil, nil),
		connected: prometheus.NewDesc("mcpfleet_nats_connected",
			"1 while this process's NATS connection is up, else 0.", nil, nil),
	}
}

func (c *natsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.msgs
	ch <- c.bytes
	ch <- c.reconn
	ch <- c.connected
}

func (c *natsCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.nc.Stats()
	ch <- prometheus.MustNewConstMetric(c.msgs, prometheus.CounterValue, float64(s.InMsgs), "in")
	ch <- prometheus.MustNewConstMetric(c.msgs, prometheus.CounterValue, float64(s.OutMsgs), "out")
	ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.CounterValue, float64(s.InBytes), "in")
	ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.CounterValue, float64(s.OutBytes), "out")
	ch <- prometheus.MustNewConstMetric(c.reconn, prometheus.CounterValue, float64(s.Reconnects))
	up := 0.0
	if c.nc.IsConnected() {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(c.connected, prometheus.GaugeValue, up)
}

// redisPoolCollector reads the Redis store's connection pool statistics
// (go-redis PoolStats) at scrape time.
type redisPoolCollector struct {
	stats                      func() *redis.PoolStats
	hits, misses, timeouts, cn *prometheus.Desc
}

func newRedisPoolCollector(stats func() *redis.PoolStats) *redisPoolCollector {
	return &redisPoolCollector{
		stats: stats,
		hits: prometheus.NewDesc("mcpfleet_redis_pool_hits_total",
			"Times the Redis store found a free connection in its pool.", nil, nil),
		misses: prometheus.NewDesc("mcpfleet_redis_pool_misses_total",
			"Times the Redis store found no free connection in its pool (and dialled one).", nil, nil),
		timeouts: prometheus.NewDesc("mcpfleet_redis_pool_timeouts_total",
			"Times the Redis store waited for a connection of its pool in vain (the pool timeout).", nil, nil),
		cn: prometheus.NewDesc("mcpfleet_redis_pool_connections",
			"The Redis store's pool connections by state: total (open), idle (open and unused); stale is go-redis's count of the stale connections it has closed so far.", []string{"state"}, nil),
	}
}

func (c *redisPoolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.hits
	ch <- c.misses
	ch <- c.timeouts
	ch <- c.cn
}

func (c *redisPoolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	if s == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.hits, prometheus.CounterValue, float64(s.Hits))
	ch <- prometheus.MustNewConstMetric(c.misses, prometheus.CounterValue, float64(s.Misses))
	ch <- prometheus.MustNewConstMetric(c.timeouts, prometheus.CounterValue, float64(s.Timeouts))
	ch <- prometheus.MustNewConstMetric(c.cn, prometheus.GaugeValue, float64(s.TotalConns), "total")
	ch <- prometheus.MustNewConstMetric(c.cn, prometheus.GaugeValue, float64(s.IdleConns), "idle")
	ch <- prometheus.MustNewConstMetric(c.cn, prometheus.GaugeValue, float64(s.StaleConns), "stale")
}

// newBuildInfo is mcpfleet_build_info: 1, labelled by Version (the
// stamped one), the VCS revision the binary was built from ("" when the
// build did not record one: go run, go test) and the Go version.
func newBuildInfo() prometheus.Collector {
	revision := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "mcpfleet_build_info",
		Help:        "Always 1: the build of this binary (mcpfleet's version, the VCS revision it was built from, the Go version).",
		ConstLabels: prometheus.Labels{"version": Version, "revision": revision, "goversion": runtime.Version()},
	})
	g.Set(1)
	return g
}
