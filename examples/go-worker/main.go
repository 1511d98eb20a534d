// A taskq worker in Go on plain stubs generated from proto/ (grpc-go): no SDK. Read it as a recipe:
// claim on a Claim stream, run each job, keep its lease alive on a Heartbeat stream, settle it on a
// Settle stream, obey throttled verdicts, and stop gracefully on SIGTERM or SIGINT. README.md beside
// it says how to generate the stubs and build it.
//
//	./go-worker              # Ctrl-C (or SIGTERM) to stop: running jobs finish and settle first
//	./go-worker -once 3      # exit after settling 3 jobs
//
// Environment: TASKQ_GRPC_URL (default http://127.0.0.1:7070), TASKQ_QUEUES (comma-separated, default
// "emails"), TASKQ_LEASE_MS (lease to ask for, default 15000), TASKQ_WORK_MS (pretend work per job,
// default 200), TASKQ_TOKEN (a bearer token, when the gateway requires one).
//
// A production worker also reopens a failed stream after a growing backoff and batches its settles
// and heartbeats; conformance/adapters/go/ does all of that and passes the conformance suite.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "taskq/gen/taskqv1"
)

const (
	concurrency = 5
	maxWait     = 10 * time.Second // the long poll: answered early when a job is enqueued
	grace       = 10 * time.Second // how long a stop lets running jobs finish
)

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envMillis(name string, def int) time.Duration {
	n, err := strconv.Atoi(env(name, strconv.Itoa(def)))
	if err != nil || n <= 0 {
		log.Fatalf("%s wants a positive number of milliseconds, got %q", name, os.Getenv(name))
	}
	return time.Duration(n) * time.Millisecond
}

// running is one job being worked on; its lease is (job id, attempt), the attempt the fencing token.
type running struct {
	lease           *pb.LeaseRef
	cancel          context.CancelFunc // aborts the work: lease lost or cancel requested
	lost            bool
	cancelRequested bool
}

type worker struct {
	client pb.WorkerServiceClient
	ctx    context.Context // carries the authorization metadata
	queues []string
	lease  time.Duration
	work   time.Duration
	id     string

	mu      sync.Mutex
	jobs    map[string]*running // by job id
	settled int
	settles pb.WorkerService_SettleClient // one request and its answer at a time, under mu
}

func main() {
	once := flag.Int("once", 0, "exit after settling this many jobs (0: run until stopped)")
	flag.Parse()
	target := strings.TrimPrefix(env("TASKQ_GRPC_URL", "http://127.0.0.1:7070"), "http://")
	// Plain-text HTTP/2, as `taskq dev` serves it. A claim answer of 5 jobs with payloads of up to 1 MiB
	// (the gateway's default limit) can pass grpc-go's default 4 MiB receive limit: raise it.
	conn, err := grpc.Dial(target, grpc.WithInsecure(), grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	// A gateway with tokens wants `authorization: Bearer <token>` on every call: in gRPC, call metadata.
	ctx := context.Background()
	if token := os.Getenv("TASKQ_TOKEN"); token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	host, _ := os.Hostname()
	w := &worker{
		client: pb.NewWorkerServiceClient(conn), ctx: ctx,
		queues: strings.Split(env("TASKQ_QUEUES", "emails"), ","),
		lease:  envMillis("TASKQ_LEASE_MS", 15000), work: envMillis("TASKQ_WORK_MS", 200),
		id: fmt.Sprintf("%s/%d/go-worker", host, os.Getpid()), jobs: map[string]*running{},
	}
	if w.settles, err = w.client.Settle(ctx); err != nil {
		log.Fatal(err)
	}
	claims, err := w.client.Claim(ctx)
	if err != nil {
		log.Fatal(err)
	}

	// SIGTERM or SIGINT: half-close the Claim stream. The gateway answers the outstanding long poll at
	// once (jobs it carries still run) and ends the stream; cancelling it instead could lose jobs
	// already claimed for us until their leases expire.
	var sendMu sync.Mutex // grpc-go allows no Send at the same time as CloseSend, nor any after it
	stopping := make(chan struct{})
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		sig := <-signals
		log.Printf("%v: stopping", sig)
		sendMu.Lock()
		close(stopping)
		claims.CloseSend()
		sendMu.Unlock()
	}()
	stopped := func() bool {
		select {
		case <-stopping:
			return true
		default:
			return false
		}
	}
	stopBeats := make(chan struct{})
	go w.heartbeat(stopBeats)

	fmt.Printf("go worker polling %s at %s\n", strings.Join(w.queues, ", "), target)
	var jobs sync.WaitGroup
	free := make(chan struct{}, concurrency) // a token per free slot
	for i := 0; i < concurrency; i++ {
		free <- struct{}{}
	}
	sleepUntil := map[string]time.Time{} // queue -> when it may be polled again, after a verdict
	claimed := 0
	for (*once == 0 || claimed < *once) && !stopped() {
		select { // poll only with a free slot: never claim more than can run
		case <-free:
		case <-stopping:
			continue
		}
		n := 1 + drain(free)
		if *once > 0 && n > *once-claimed {
			for ; n > *once-claimed; n-- {
				free <- struct{}{}
			}
		}
		now := time.Now()
		var awake []string
		wait := maxWait
		for _, q := range w.queues {
			if until := sleepUntil[q]; until.After(now) {
				if until.Sub(now) < wait { // the long poll must not outlast a sleeping queue's verdict
					wait = until.Sub(now)
				}
			} else {
				awake = append(awake, q)
			}
		}
		if len(awake) == 0 {
			giveBack(free, n)
			select {
			case <-time.After(wait):
			case <-stopping:
			}
			continue
		}
		sendMu.Lock()
		if stopped() {
			sendMu.Unlock()
			giveBack(free, n)
			break
		}
		err := claims.Send(&pb.ClaimRequest{
			Queues: awake, MaxJobs: uint32(n), MaxWait: durationpb.New(wait), WorkerId: w.id,
			LeaseDuration: durationpb.New(w.lease),
		})
		sendMu.Unlock()
		var res *pb.ClaimResponse
		if err == nil {
			res, err = claims.Recv() // exactly one answer per poll
		}
		if err == io.EOF {
			break // we half-closed (a stop) and the gateway ended the stream
		}
		if err != nil {
			log.Fatalf("claim stream failed: %v", err) // a production worker reconnects with backoff
		}
		for _, v := range res.Throttled {
			// A verdict is an answer, not an error (PAUSED, BREAKER_OPEN, MAX_RUNNING, THROTTLE,
			// RATE_LIMIT, ...): skip that queue for exactly retry_after, keep polling the others.
			fmt.Printf("queue %s throttled (%s), retry in %d ms\n", v.Queue, v.Reason, v.RetryAfter.AsDuration().Milliseconds())
			sleepUntil[v.Queue] = time.Now().Add(v.RetryAfter.AsDuration())
		}
		claimed += len(res.Jobs)
		giveBack(free, n-len(res.Jobs))
		for _, job := range res.Jobs {
			jobs.Add(1)
			go func(job *pb.Job) {
				defer jobs.Done()
				w.run(job)
				free <- struct{}{}
			}(job)
		}
	}

	sendMu.Lock()
	if !stopped() {
		claims.CloseSend() // done polling (-once): end our side of the stream
	}
	sendMu.Unlock()

	// Let running jobs finish (their leases still heartbeated), up to the grace period.
	done := make(chan struct{})
	go func() { jobs.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		log.Printf("jobs still running after %v: their leases will expire and they will be retried", grace)
	}
	close(stopBeats)
	w.mu.Lock()
	w.settles.CloseSend()
	fmt.Printf("stopped after settling %d jobs\n", w.settled)
	w.mu.Unlock()
}

func drain(free chan struct{}) int {
	n := 0
	for {
		select {
		case <-free:
			n++
		default:
			return n
		}
	}
}

func giveBack(free chan struct{}, n int) {
	for i := 0; i < n; i++ {
		free <- struct{}{}
	}
}

// run works on one job, then settles it with its lease.
func (w *worker) run(job *pb.Job) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &running{lease: &pb.LeaseRef{JobId: job.Id, Attempt: job.Attempt}, cancel: cancel}
	w.mu.Lock()
	w.jobs[job.Id] = r
	w.mu.Unlock()
	started := time.Now()
	shown := job.Payload
	if len(shown) > 100 {
		shown = append(shown[:100:100], "..."...)
	}
	fmt.Printf("job %s attempt %d on %s: %s\n", job.Id, job.Attempt, job.Queue, shown)
	select { // the real work goes here; it stops early when the job is aborted
	case <-time.After(w.work):
	case <-ctx.Done():
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.jobs, job.Id)
	if r.lost {
		fmt.Printf("job %s: lease lost, not settling\n", job.Id)
		return
	}
	s := &pb.Settlement{Lease: r.lease, Duration: durationpb.New(time.Since(started))}
	if r.cancelRequested {
		s.Outcome = &pb.Settlement_Cancelled{Cancelled: &pb.Cancelled{Reason: "cancel requested"}}
	} else {
		result, _ := json.Marshal(map[string]any{"ok": true, "by": "go-worker"})
		s.Outcome = &pb.Settlement_Success{Success: &pb.Success{Result: result}}
		// A failure: &pb.Settlement_Failure{Failure: &pb.Failure{Type: "SmtpError", Message: "...",
		// Retryable: true}}. Retryable defaults to false, which fails the job for good.
	}
	if err := w.settles.Send(&pb.SettleRequest{Settlements: []*pb.Settlement{s}}); err != nil {
		log.Fatalf("settle stream failed: %v", err)
	}
	res, err := w.settles.Recv()
	if err != nil {
		log.Fatalf("settle stream failed: %v", err)
	}
	result := res.Results[0]
	fmt.Printf("job %s settled: %s -> %s\n", job.Id, result.Status, result.State)
	if result.Status == pb.SettleStatus_SETTLE_STATUS_ACCEPTED {
		w.settled++
	}
}

// heartbeat extends every running job's lease each third of a lease, so none lapses between beats.
func (w *worker) heartbeat(stop chan struct{}) {
	beats, err := w.client.Heartbeat(w.ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer beats.CloseSend()
	tick := time.NewTicker(w.lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		w.mu.Lock()
		req := &pb.HeartbeatRequest{}
		for _, r := range w.jobs {
			req.Leases = append(req.Leases, r.lease)
		}
		w.mu.Unlock()
		if len(req.Leases) == 0 {
			continue
		}
		if err := beats.Send(req); err != nil {
			log.Fatalf("heartbeat stream failed: %v", err)
		}
		res, err := beats.Recv()
		if err != nil {
			log.Fatalf("heartbeat stream failed: %v", err)
		}
		w.mu.Lock()
		for _, status := range res.Leases {
			fmt.Printf("heartbeat job %s: %s\n", status.Lease.GetJobId(), status.State)
			r := w.jobs[status.Lease.GetJobId()]
			if r == nil {
				continue // settled while the beat was out
			}
			switch status.State {
			case pb.LeaseState_LEASE_STATE_LEASE_LOST: // someone else may run it now: stop, don't settle
				r.lost = true
				r.cancel()
			case pb.LeaseState_LEASE_STATE_CANCEL_REQUESTED: // stop and settle it cancelled
				r.cancelRequested = true
				r.cancel()
			}
		}
		w.mu.Unlock()
	}
}
