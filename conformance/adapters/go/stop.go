package main

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	pb "taskq/gen/taskqv1"
)

// Stop polls no more, lets handlers finish until the grace deadline, then fails the stragglers
// (retryable) and waits a little for the last settles' answers.
func (w *Worker) Stop(grace time.Duration) {
	deadline := time.Now().Add(grace)
	w.mu.Lock()
	w.stopping = true
	w.releaseBuffered("", "worker stopping")
	w.changed.notify()
	cs := w.claim
	w.mu.Unlock()
	// Half-close the claim stream: the gateway answers an outstanding long poll at once, on a live
	// stream, so jobs it claimed a moment before the stop still reach us (and run, and settle) rather
	// than being lost in a reset and left RUNNING until their leases expire. A gateway that does not
	// answer has the stream cancelled after pollAnswerOnDrain.
	if cs != nil {
		cs.closeSend()
	}
	select {
	case <-w.claimDone:
	case <-time.After(minDuration(grace, pollAnswerOnDrain)):
		if cs != nil {
			cs.cancel() // an outstanding long poll must not hold up the stop
		}
		<-w.claimDone
	}

	w.mu.Lock()
	for w.holdsUnlost() && time.Now().Before(deadline) {
		w.changed.waitUntil(deadline)
	}
	var stragglers []leaseKey
	for k, h := range w.held {
		if !h.settling && !h.lost {
			stragglers = append(stragglers, k)
		}
	}
	w.beating = false
	w.changed.notify()
	for _, k := range stragglers {
		h := w.held[k]
		h.abortNow()
		failure := &pb.Failure{
			Type: "WorkerShutdown", Message: "worker stopped before the handler finished",
			Retryable: true, RetryAfter: durationpb.New(0),
		}
		w.settle(k, h, &pb.Settlement{Outcome: &pb.Settlement_Failure{Failure: failure}})
	}
	w.mu.Unlock()
	w.stopBeats()
	w.settler.close(time.Now().Add(5 * time.Second))
}

func (w *Worker) holdsUnlost() bool {
	for _, h := range w.held {
		if !h.lost {
			return true
		}
	}
	return false
}
