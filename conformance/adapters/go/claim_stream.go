package main

import (
	"context"
	"errors"
	"sync"

	pb "taskq/gen/taskqv1"
)

var errDraining = errors.New("the claim stream is half-closed: the worker is stopping")

// claimStream is one Claim stream, which the stop half-closes from another goroutine: grpc-go allows
// no Send at the same time as CloseSend, so both go through mu.
type claimStream struct {
	cancel     context.CancelFunc
	mu         sync.Mutex
	stream     pb.WorkerService_ClaimClient
	halfClosed bool
}

func (cs *claimStream) open(ctx context.Context, client pb.WorkerServiceClient) error {
	s, err := client.Claim(ctx)
	if err != nil {
		return err
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.stream = s
	if cs.halfClosed {
		_ = s.CloseSend()
	}
	return nil
}

// poll sends one poll and waits for its one answer.
func (cs *claimStream) poll(req *pb.ClaimRequest) (*pb.ClaimResponse, error) {
	cs.mu.Lock()
	if cs.halfClosed {
		cs.mu.Unlock()
		return nil, errDraining
	}
	err := cs.stream.Send(req)
	cs.mu.Unlock()
	if err != nil {
		return nil, sendError(err, func() error { _, e := cs.stream.Recv(); return e })
	}
	res, err := cs.stream.Recv()
	if err != nil {
		return nil, recvError(err)
	}
	return res, nil
}

// closeSend half-closes the stream (now, or as soon as it opens): the gateway answers an outstanding
// long poll at once and ends the stream.
func (cs *claimStream) closeSend() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.halfClosed {
		return
	}
	cs.halfClosed = true
	if cs.stream != nil {
		_ = cs.stream.CloseSend()
	}
}

// drain half-closes the stream and reads it to its end, so it ends cleanly (no reset); an answer that
// still comes is the worker's to run or give back.
func (cs *claimStream) drain(w *Worker) {
	cs.closeSend()
	cs.mu.Lock()
	s := cs.stream
	cs.mu.Unlock()
	if s == nil {
		return
	}
	for {
		res, err := s.Recv()
		if err != nil {
			return
		}
		w.answered(res, 0, false)
	}
}
