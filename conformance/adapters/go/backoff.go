package main

import (
	"math"
	"math/rand"
	"time"
)

// backoff is the reconnect backoff of one stream: capped exponential with jitter, reset after an
// answered request (gRPC's connection backoff shape: multiplier 1.6, jitter +-20%). One goroutine
// uses each.
type backoff struct {
	initial, max time.Duration
	failures     int
}

const (
	backoffMultiplier = 1.6
	backoffJitter     = 0.2
)

// next is how long to wait before the next attempt; each call counts one more failure.
func (b *backoff) next() time.Duration {
	base := math.Min(float64(b.max), float64(b.initial)*math.Pow(backoffMultiplier, float64(b.failures)))
	b.failures++
	spread := base * backoffJitter * (2*rand.Float64() - 1)
	return time.Duration(math.Max(0, math.Min(float64(b.max), base+spread)))
}

func (b *backoff) reset() { b.failures = 0 }
