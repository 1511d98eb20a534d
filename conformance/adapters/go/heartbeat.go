package main

import (
	"context"
	"log"
	"time"

	pb "taskq/gen/taskqv1"
)

// heartbeatLoop keeps every held lease alive on one Heartbeat stream, reopened after a failure with
// backoff, until the stop gives up the stragglers.
func (w *Worker) heartbeatLoop(ctx context.Context) {
	b := w.backoff()
	for {
		streamCtx, cancel := context.WithCancel(ctx)
		err := w.beatOn(streamCtx, b)
		cancel()
		w.mu.Lock()
		beating := w.beating
		w.mu.Unlock()
		if err == nil || !beating {
			return
		}
		log.Printf("heartbeat stream failed (%v); reconnecting", err)
		wake := time.Now().Add(b.next())
		w.mu.Lock()
		for w.beating && time.Now().Before(wake) {
			w.changed.waitUntil(wake)
		}
		w.mu.Unlock()
	}
}

// beatOn sends, whenever a lease is due, one beat for every held lease; nil once the worker stops beating.
func (w *Worker) beatOn(ctx context.Context, b *backoff) error {
	stream, err := w.client.Heartbeat(ctx)
	if err != nil {
		return err
	}
	for {
		keys, ok := w.nextBeat()
		if !ok {
			return nil
		}
		req := &pb.HeartbeatRequest{}
		for _, k := range keys {
			req.Leases = append(req.Leases, &pb.LeaseRef{JobId: k.id, Attempt: k.attempt})
		}
		if err := stream.Send(req); err != nil {
			return sendError(err, func() error { _, e := stream.Recv(); return e })
		}
		res, err := stream.Recv()
		if err != nil {
			return recvError(err)
		}
		b.reset()
		w.beaten(keys, res)
	}
}

// nextBeat waits until some held lease is due and names them all; false once the worker stops beating.
func (w *Worker) nextBeat() ([]leaseKey, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.beating {
		var keys []leaseKey
		var earliest time.Time
		for k, h := range w.held {
			if h.settling || h.lost {
				continue
			}
			keys = append(keys, k)
			if earliest.IsZero() || h.due.Before(earliest) {
				earliest = h.due
			}
		}
		if len(keys) > 0 && !earliest.After(time.Now()) {
			return keys, true
		}
		if len(keys) == 0 {
			w.changed.wait(-1)
		} else {
			w.changed.waitUntil(earliest)
		}
	}
	return nil, false
}

func (w *Worker) beaten(keys []leaseKey, res *pb.HeartbeatResponse) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, k := range keys {
		if i >= len(res.Leases) {
			break
		}
		status := res.Leases[i]
		h := w.held[k]
		if h == nil || h.settling {
			continue // settled while the beat was out
		}
		if status.State == pb.LeaseState_LEASE_STATE_LEASE_LOST {
			h.lost = true
			h.abortNow()
			if w.removeFromBuffer(k) { // never started: nothing to abort or settle
				w.finish(k)
			}
			continue
		}
		if status.LeaseDeadline != nil {
			h.deadline = time.Now().Add(time.Until(status.LeaseDeadline.AsTime()))
		}
		h.due = w.due(h.deadline)
		if status.State == pb.LeaseState_LEASE_STATE_CANCEL_REQUESTED {
			if w.removeFromBuffer(k) {
				// Never started: given back, and the gateway cancels it (a cancel is pending).
				w.settle(k, h, &pb.Settlement{Outcome: &pb.Settlement_Released{Released: &pb.Released{Reason: "cancel requested"}}})
			} else {
				h.cancel = true
				h.abortNow()
			}
		}
	}
	w.changed.notify()
}
