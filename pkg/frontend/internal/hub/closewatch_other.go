//go:build !linux

package hub

import (
	"log/slog"
	"sync"
)

func startCloseWatcher(*slog.Logger, bool, func(*hubStream), *sync.WaitGroup, <-chan struct{}) closeWatcher {
	return noWatcher{}
}
