package main

import (
	"sync"
	"time"
)

// changes is a condition variable with a timeout: waiters under mu sleep until notify (also under mu)
// or their timeout, whichever comes first.
type changes struct {
	mu *sync.Mutex
	ch chan struct{}
}

func newChanges(mu *sync.Mutex) *changes { return &changes{mu: mu, ch: make(chan struct{})} }

// notify wakes every waiter. Call it with mu held.
func (c *changes) notify() {
	close(c.ch)
	c.ch = make(chan struct{})
}

// wait releases mu until notify or d has passed (d < 0 waits for notify only), then takes it again.
func (c *changes) wait(d time.Duration) {
	ch := c.ch
	c.mu.Unlock()
	defer c.mu.Lock()
	if d < 0 {
		<-ch
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	}
}

// waitUntil waits as wait does, until the moment at (no later).
func (c *changes) waitUntil(at time.Time) { c.wait(maxDuration(0, time.Until(at))) }

func maxDuration(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}

func minDuration(a, b time.Duration) time.Duration {
	if a < b {
		return a
	}
	return b
}
