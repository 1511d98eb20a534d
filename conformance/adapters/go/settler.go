package main

import (
	"context"
	"io"
	"log"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "taskq/gen/taskqv1"
)

// settler sends settlements in batches over one Settle stream. Requests are answered in order, so a
// FIFO of in-flight batches pairs each response with its request. When the stream fails, unanswered
// settlements are re-sent on a new stream with the same lease (settles are idempotent); an answered
// settle, accepted or refused, is final and never re-sent.
type settler struct {
	client  pb.WorkerServiceClient
	ctx     context.Context // carries the call metadata
	backoff *backoff

	mu         sync.Mutex
	changed    *changes
	pending    []settleItem
	unanswered int
	closed     bool
	done       chan struct{}
}

type settleItem struct {
	settlement *pb.Settlement
	answered   func(*pb.SettleResult) // nil result: given up
}

func newSettler(client pb.WorkerServiceClient, ctx context.Context, b *backoff) *settler {
	st := &settler{client: client, ctx: ctx, backoff: b, done: make(chan struct{})}
	st.changed = newChanges(&st.mu)
	go st.run()
	return st
}

// settle queues one settlement; answered runs once, from the settler's goroutine, when it is answered.
func (st *settler) settle(s *pb.Settlement, answered func(*pb.SettleResult)) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.pending = append(st.pending, settleItem{s, answered})
	st.unanswered++
	st.changed.notify()
}

// close waits until everything is answered or the deadline passes, then half-closes the stream.
func (st *settler) close(deadline time.Time) {
	st.mu.Lock()
	for st.unanswered > 0 && time.Now().Before(deadline) {
		st.changed.waitUntil(deadline)
	}
	st.closed = true
	st.changed.notify()
	st.mu.Unlock()
	select {
	case <-st.done:
	case <-time.After(time.Second):
	}
}

func (st *settler) run() {
	defer close(st.done)
	for {
		st.mu.Lock()
		for len(st.pending) == 0 && !st.closed {
			st.changed.wait(-1)
		}
		closed := st.closed
		st.mu.Unlock()
		if closed {
			return
		}
		ctx, cancel := context.WithCancel(st.ctx)
		var inflight [][]settleItem
		stream, err := st.client.Settle(ctx)
		if err == nil {
			err = st.serve(stream, &inflight)
		}
		if err == nil {
			// Half-close and read the end, so the stream ends cleanly rather than by a reset.
			_ = stream.CloseSend()
			_, _ = stream.Recv()
			cancel()
			return
		}
		cancel()
		if status.Code(err) == codes.InvalidArgument && len(inflight) > 0 {
			// Re-sending a refused batch would fail forever: give it up (its leases expire).
			for _, item := range inflight[0] {
				st.answer(item, nil)
			}
			inflight = inflight[1:]
		}
		st.mu.Lock()
		var again []settleItem
		for _, batch := range inflight {
			again = append(again, batch...)
		}
		st.pending = append(again, st.pending...)
		st.mu.Unlock()
		log.Printf("settle stream failed (%v); reconnecting", err)
		time.Sleep(st.backoff.next())
	}
}

// serve sends what is pending as one request at a time and pairs answers with requests, until the
// settler closes (nil) or the stream fails.
func (st *settler) serve(stream pb.WorkerService_SettleClient, inflight *[][]settleItem) error {
	for {
		st.mu.Lock()
		for len(st.pending) == 0 && len(*inflight) == 0 && !st.closed {
			st.changed.wait(500 * time.Millisecond)
		}
		if st.closed {
			st.mu.Unlock()
			return nil
		}
		batch := st.pending
		st.pending = nil
		st.mu.Unlock()
		if len(batch) > 0 {
			*inflight = append(*inflight, batch)
			req := &pb.SettleRequest{}
			for _, item := range batch {
				req.Settlements = append(req.Settlements, item.settlement)
			}
			if err := stream.Send(req); err != nil {
				return sendError(err, func() error { _, e := stream.Recv(); return e })
			}
		}
		if len(*inflight) > 0 {
			res, err := stream.Recv() // on failure the batch stays in flight, to re-send
			if err != nil {
				return recvError(err)
			}
			st.backoff.reset()
			batch := (*inflight)[0]
			*inflight = (*inflight)[1:]
			for i, item := range batch {
				var result *pb.SettleResult
				if i < len(res.Results) {
					result = res.Results[i]
				}
				st.answer(item, result)
			}
		}
	}
}

func (st *settler) answer(item settleItem, result *pb.SettleResult) {
	item.answered(result)
	st.mu.Lock()
	st.unanswered--
	st.changed.notify()
	st.mu.Unlock()
}

// sendError is the real reason a Send failed. grpc-go's Send answers io.EOF when the stream has
// ended; the status that ended it comes from Recv.
func sendError(err error, recv func() error) error {
	if err != io.EOF {
		return err
	}
	for {
		if e := recv(); e != nil {
			return recvError(e)
		}
	}
}

// recvError names a clean end by the gateway, which grpc-go reports as io.EOF, as the error it is
// for a worker that did not half-close.
func recvError(err error) error {
	if err == io.EOF {
		return errGatewayEnded
	}
	return err
}
