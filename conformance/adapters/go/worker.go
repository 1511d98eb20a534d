package main

import (
	"context"
	"errors"
	"log"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "taskq/gen/taskqv1"
)

// A taskq worker on plain generated gRPC stubs: one Claim, one Heartbeat and one Settle stream.
//
// Verdicts are answers, not errors: a throttled queue sleeps exactly retry_after while the others keep
// polling, and no long poll outlasts a sleeping queue's retry_after. Leases are heartbeated before
// their deadline (the one each answer gives), settles carry the attempt, failed streams reconnect with
// a capped, growing backoff, and a stop half-closes the Claim stream, lets handlers finish until the
// grace deadline, then fails the stragglers (retryable). With prefetch it holds jobs beyond its free
// slots and gives back (Released) the unstarted ones when their queue is paused or its breaker open,
// when a heartbeat says CANCEL_REQUESTED, and at the stop. Each poll states its concurrency and
// prefetch, so the gateway knows which of the jobs it asks for would wait in the buffer; a poll with no
// free handler slot only tops up the buffer: it does not wait (max_wait 0), and after an empty answer
// the worker polls again only once a held job is settled.

// Settings of one worker; the conformance runner's StartWorker maps onto them.
type Settings struct {
	Target           string
	Token            string
	Queues           []string
	Concurrency      int
	WorkerID         string
	Lease            time.Duration // lease_duration asked on each poll; 0 asks none (the gateway's default)
	MaxWait          time.Duration // max_wait of each poll
	Grace            time.Duration
	ReconnectInitial time.Duration
	ReconnectMax     time.Duration
	Prefetch         int // jobs held beyond the free handler slots; 0 holds none
}

// Outcome is what a handler did: Result (success), Failure, or Aborted.
type Outcome struct {
	Result  []byte
	Failure *pb.Failure
	Aborted bool
}

// Handler runs one job; abort closes when the job is aborted (lease lost, cancel, shutdown deadline).
type Handler func(job *pb.Job, abort <-chan struct{}) Outcome

const (
	// Floor between beats, so a lease that looks expired can't make a tight loop.
	minBeat = 100 * time.Millisecond
	// How long a draining worker waits for its outstanding poll's answer before cancelling the stream.
	pollAnswerOnDrain = time.Second
)

var errGatewayEnded = errors.New("stream ended by the gateway")

type leaseKey struct {
	id      string
	attempt uint32
}

type held struct {
	job      *pb.Job
	deadline time.Time // when the lease ends
	due      time.Time // when it wants its next heartbeat
	started  time.Time
	abort    chan struct{}
	aborted  bool
	running  bool // its handler started; until then it waits in the buffer
	settling bool
	lost     bool
	cancel   bool
}

func (h *held) abortNow() {
	if !h.aborted {
		h.aborted = true
		close(h.abort)
	}
}

// Worker claims, runs, heartbeats and settles jobs until Stop.
type Worker struct {
	s       Settings
	handler Handler
	client  pb.WorkerServiceClient
	ctx     context.Context // carries the authorization metadata

	mu       sync.Mutex
	changed  *changes
	held     map[leaseKey]*held
	capacity int // jobs held at once, running or buffered
	used     int // slots held: jobs claimed and not yet settled or given up
	// A top-up poll found nothing: the next waits for a held job to go.
	slotAwaited bool
	running     int
	buffer      []leaseKey // held jobs not started yet, in claim order
	sleepUntil  map[string]time.Time
	stopping    bool
	beating     bool // heartbeats go on through a drain, until the stragglers are given up
	claim       *claimStream

	claimDone chan struct{}
	stopBeats context.CancelFunc
	settler   *settler
}

// NewWorker connects lazily; nothing runs until Start.
func NewWorker(conn *grpc.ClientConn, ctx context.Context, s Settings, handler Handler) *Worker {
	w := &Worker{
		s: s, handler: handler, client: pb.NewWorkerServiceClient(conn), ctx: ctx,
		held: map[leaseKey]*held{}, capacity: s.Concurrency + s.Prefetch,
		sleepUntil: map[string]time.Time{}, beating: true, claimDone: make(chan struct{}),
	}
	w.changed = newChanges(&w.mu)
	w.settler = newSettler(w.client, ctx, w.backoff())
	return w
}

func (w *Worker) backoff() *backoff {
	return &backoff{initial: w.s.ReconnectInitial, max: w.s.ReconnectMax}
}

// Start runs the claim and heartbeat loops.
func (w *Worker) Start() {
	beatCtx, stopBeats := context.WithCancel(w.ctx)
	w.stopBeats = stopBeats
	go w.claimLoop()
	go w.heartbeatLoop(beatCtx)
}

// --- claiming ----------------------------------------------------------------------------------

func (w *Worker) awake(now time.Time) []string {
	var queues []string
	for _, q := range w.s.Queues {
		if !now.Before(w.sleepUntil[q]) {
			queues = append(queues, q)
		}
	}
	return queues
}

// nextWake is the earliest moment a sleeping queue may be polled again.
func (w *Worker) nextWake(now time.Time) (time.Time, bool) {
	var first time.Time
	for _, t := range w.sleepUntil {
		if t.After(now) && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	return first, !first.IsZero()
}

func (w *Worker) claimLoop() {
	defer close(w.claimDone)
	b := w.backoff()
	for {
		w.mu.Lock()
		if w.stopping {
			w.mu.Unlock()
			return
		}
		ctx, cancel := context.WithCancel(w.ctx)
		cs := &claimStream{cancel: cancel}
		w.claim = cs
		w.mu.Unlock()
		err := w.pollOn(ctx, cs, b)
		w.mu.Lock()
		stopping := w.stopping
		w.mu.Unlock()
		if stopping {
			cs.drain(w)
			cancel() // a no-op on a stream that ended; a reset otherwise
			return
		}
		cancel()
		log.Printf("claim stream failed (%v); reconnecting", err)
		wake := time.Now().Add(b.next())
		w.mu.Lock()
		for !w.stopping && time.Now().Before(wake) {
			w.changed.waitUntil(wake)
		}
		w.mu.Unlock()
	}
}

// pollOn polls on one stream, one poll out at a time, until it fails or the worker stops.
func (w *Worker) pollOn(ctx context.Context, cs *claimStream, b *backoff) error {
	if err := cs.open(ctx, w.client); err != nil {
		return err
	}
	for {
		w.mu.Lock()
		for !w.stopping {
			now := time.Now()
			free := w.capacity - w.used
			if free > 0 && !w.slotAwaited && len(w.awake(now)) > 0 {
				break
			}
			wait := time.Duration(-1)
			if wake, ok := w.nextWake(now); free > 0 && !w.slotAwaited && ok {
				wait = wake.Sub(now)
			}
			w.changed.wait(wait)
		}
		if w.stopping {
			w.mu.Unlock()
			return nil
		}
		now := time.Now()
		queues := w.awake(now)
		n := w.capacity - w.used
		w.used += n
		// A long poll must not outlast a sleeping queue's retry_after.
		wait := w.s.MaxWait
		if wake, ok := w.nextWake(now); ok {
			wait = minDuration(wait, wake.Sub(now))
		}
		// No free handler slot (every slot's job held): this poll only tops up the buffer.
		topUp := n <= w.s.Prefetch
		if topUp {
			wait = 0
		}
		w.mu.Unlock()
		req := &pb.ClaimRequest{
			Queues: queues, MaxJobs: uint32(n), MaxWait: durationpb.New(wait), WorkerId: w.s.WorkerID,
			Concurrency: uint32(w.s.Concurrency), Prefetch: uint32(w.s.Prefetch),
		}
		if w.s.Lease > 0 {
			req.LeaseDuration = durationpb.New(w.s.Lease)
		}
		res, err := cs.poll(req)
		if err != nil {
			w.mu.Lock()
			w.used -= n
			w.changed.notify()
			w.mu.Unlock()
			return err
		}
		b.reset()
		w.answered(res, n, topUp)
	}
}

// Verdicts that make the worker give back its unstarted jobs of the queue: none would start soon.
func givesBack(r pb.ThrottleReason) bool {
	return r == pb.ThrottleReason_THROTTLE_REASON_PAUSED || r == pb.ThrottleReason_THROTTLE_REASON_BREAKER_OPEN
}

func (w *Worker) answered(res *pb.ClaimResponse, reserved int, topUp bool) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range res.Throttled {
		// A verdict is not an error: sleep that queue exactly retry_after; unknown reasons too.
		w.sleepUntil[v.Queue] = now.Add(v.RetryAfter.AsDuration())
		// Pause is exact for starts too: no buffered job of a paused (or broken) queue starts.
		if givesBack(v.Reason) {
			name := strings.TrimPrefix(v.Reason.String(), "THROTTLE_REASON_")
			w.releaseBuffered(v.Queue, "queue "+name)
		}
	}
	w.used += len(res.Jobs) - reserved
	// Polled again at once, an empty top-up would loop: wait for a held job to go, unless one already
	// went while the poll was out.
	w.slotAwaited = topUp && len(res.Jobs) == 0 && w.used >= w.s.Concurrency
	for _, job := range res.Jobs {
		h := &held{job: job, deadline: now.Add(time.Until(job.LeaseDeadline.AsTime())), started: now, abort: make(chan struct{})}
		h.due = w.due(h.deadline)
		k := leaseKey{job.Id, job.Attempt}
		w.held[k] = h
		w.buffer = append(w.buffer, k)
	}
	w.startBuffered()
	w.changed.notify()
}

// startBuffered (under mu) starts buffered jobs, oldest claim first, while handler slots are free. A
// stopping worker gives back what it cannot start (a poll answered at the stop may bring jobs).
func (w *Worker) startBuffered() {
	for len(w.buffer) > 0 && w.running < w.s.Concurrency {
		k := w.buffer[0]
		w.buffer = w.buffer[1:]
		h := w.held[k]
		h.running = true
		h.started = time.Now()
		w.running++
		go w.run(k, h)
	}
	if w.stopping {
		w.releaseBuffered("", "worker stopping")
	}
}

// releaseBuffered (under mu) gives back unstarted jobs, of one queue or ("") all: a Released each.
func (w *Worker) releaseBuffered(queue, reason string) {
	kept := w.buffer[:0]
	var released []leaseKey
	for _, k := range w.buffer {
		if queue == "" || w.held[k].job.Queue == queue {
			released = append(released, k)
		} else {
			kept = append(kept, k)
		}
	}
	w.buffer = kept
	for _, k := range released {
		w.settle(k, w.held[k], &pb.Settlement{Outcome: &pb.Settlement_Released{Released: &pb.Released{Reason: reason}}})
	}
}

func (w *Worker) removeFromBuffer(k leaseKey) bool {
	for i, b := range w.buffer {
		if b == k {
			w.buffer = append(w.buffer[:i], w.buffer[i+1:]...)
			return true
		}
	}
	return false
}

// due is when a lease ending at deadline wants its next heartbeat: a third of the way there.
func (w *Worker) due(deadline time.Time) time.Time {
	remaining := time.Until(deadline)
	if w.s.Lease > 0 {
		remaining = minDuration(remaining, w.s.Lease)
	}
	return time.Now().Add(maxDuration(minBeat, remaining/3))
}

// --- running and settling ----------------------------------------------------------------------

func (w *Worker) run(k leaseKey, h *held) {
	out := w.handler(h.job, h.abort)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.running--
	w.startBuffered()
	switch {
	case h.settling: // settled at the shutdown deadline already
	case h.lost:
		w.finish(k)
	case h.cancel:
		w.settle(k, h, &pb.Settlement{Outcome: &pb.Settlement_Cancelled{Cancelled: &pb.Cancelled{Reason: "cancel requested"}}})
	case out.Aborted:
		w.finish(k)
	case out.Failure != nil:
		w.settle(k, h, &pb.Settlement{Outcome: &pb.Settlement_Failure{Failure: out.Failure}})
	default:
		w.settle(k, h, &pb.Settlement{Outcome: &pb.Settlement_Success{Success: &pb.Success{Result: out.Result}}})
	}
}

// settle (under mu) hands one settlement to the settler; the job holds its slot until it is answered.
func (w *Worker) settle(k leaseKey, h *held, s *pb.Settlement) {
	h.settling = true
	s.Lease = &pb.LeaseRef{JobId: h.job.Id, Attempt: h.job.Attempt}
	if h.running {
		s.Duration = durationpb.New(time.Since(h.started)) // a released job never ran: no run time
	}
	w.settler.settle(s, func(result *pb.SettleResult) {
		if result != nil && result.Status != pb.SettleStatus_SETTLE_STATUS_ACCEPTED {
			log.Printf("settle of job %s attempt %d refused: %s", k.id, k.attempt, result.Status)
		}
		w.mu.Lock()
		w.finish(k)
		w.mu.Unlock()
	})
}

// finish (under mu): the job no longer holds its slot.
func (w *Worker) finish(k leaseKey) {
	if _, ok := w.held[k]; ok {
		delete(w.held, k)
		w.used--
		w.slotAwaited = false
		w.changed.notify()
	}
}
