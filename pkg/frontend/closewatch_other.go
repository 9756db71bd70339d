//go:build !linux

package frontend

import (
	"log/slog"
	"sync"
)

func startCloseWatcher(*slog.Logger, func(*hubStream), *sync.WaitGroup, <-chan struct{}) closeWatcher {
	return noWatcher{}
}
