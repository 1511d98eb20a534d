// The conformance adapter of a Go worker that uses only stubs generated from proto/ (grpc-go).
//
// Speaks the runner <-> program protocol (conformance/README.md): StartWorker in, Ready out, handler
// events out, StopWorker in, Stopped out, exit 0. Build it with build.sh beside this file, then run it
// under the suite:
//
//	npx taskq-conformance worker -- "$(conformance/adapters/go/build.sh)"
package main

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	cpb "taskq/gen/conformancev1"
	pb "taskq/gen/taskqv1"
)

// A claim answer carries up to max_jobs payloads of up to the gateway's payload limit (1 MiB by
// default): past grpc-go's default 4 MiB receive limit, Recv fails RESOURCE_EXHAUSTED and the jobs
// the answer carried stay claimed until their leases expire. The gateway writes no message over
// max(8 MiB, twice its payload limit), at most 128 MiB.
const maxAnswerBytes = 128 << 20

var stdoutMu sync.Mutex

// send writes one ProgramMessage as a JSON line: stdout carries nothing else.
func send(m *cpb.ProgramMessage) {
	line, err := protojson.Marshal(m)
	if err != nil {
		log.Fatalf("encoding %v: %v", m, err)
	}
	stdoutMu.Lock()
	defer stdoutMu.Unlock()
	os.Stdout.Write(append(line, '\n'))
}

func handlerEvent(job *pb.Job, kind cpb.HandlerEventKind) {
	send(&cpb.ProgramMessage{Message: &cpb.ProgramMessage_Handler{
		Handler: &cpb.HandlerEvent{JobId: job.Id, Attempt: job.Attempt, Kind: kind},
	}})
}

// read returns the next runner message; it exits the program when stdin ends first.
func read(lines *bufio.Scanner) *cpb.RunnerMessage {
	for lines.Scan() {
		text := strings.TrimSpace(lines.Text())
		if text == "" {
			continue
		}
		m := &cpb.RunnerMessage{}
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal([]byte(text), m); err != nil {
			log.Fatalf("bad runner message %q: %v", text, err)
		}
		return m
	}
	log.Fatalf("stdin ended before the runner's next message (%v)", lines.Err())
	return nil
}

// genericHandler does what the job's payload (a JobInstruction) says.
func genericHandler(job *pb.Job, abort <-chan struct{}) Outcome {
	ins := &cpb.JobInstruction{}
	if err := protojson.Unmarshal(job.Payload, ins); err != nil {
		return Outcome{Failure: &pb.Failure{Type: "BadInstruction", Message: err.Error()}}
	}
	handlerEvent(job, cpb.HandlerEventKind_HANDLER_EVENT_KIND_STARTED)
	finished := true
	if ins.IgnoreAbort {
		time.Sleep(ins.Run.AsDuration())
	} else {
		t := time.NewTimer(ins.Run.AsDuration())
		select {
		case <-abort:
			finished = false
		case <-t.C:
		}
		t.Stop()
	}
	if !finished {
		handlerEvent(job, cpb.HandlerEventKind_HANDLER_EVENT_KIND_ABORTED)
		return Outcome{Aborted: true}
	}
	handlerEvent(job, cpb.HandlerEventKind_HANDLER_EVENT_KIND_FINISHED)
	if fail := ins.GetFail(); fail != nil {
		return Outcome{Failure: proto.Clone(fail).(*pb.Failure)}
	}
	return Outcome{Result: []byte(ins.GetSucceed().GetResult())}
}

func orDefault(d *durationpb.Duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return d.AsDuration()
}

func main() {
	log.SetFlags(log.Lmicroseconds)
	log.SetPrefix("go-adapter: ")
	lines := bufio.NewScanner(os.Stdin)
	lines.Buffer(make([]byte, 64*1024), 16*1024*1024)
	start := read(lines).GetStart()
	if start == nil {
		log.Fatal("the runner's first message is not start")
	}
	host, _ := os.Hostname()
	s := Settings{
		Target:           strings.TrimPrefix(start.GatewayUrl, "http://"),
		Token:            start.Token,
		Queues:           start.Queues,
		Concurrency:      int(start.Concurrency),
		WorkerID:         start.WorkerId,
		Lease:            orDefault(start.LeaseDuration, 0),
		MaxWait:          orDefault(start.MaxWait, 30*time.Second),
		Grace:            orDefault(start.ShutdownGrace, 30*time.Second),
		ReconnectInitial: orDefault(start.ReconnectInitial, 100*time.Millisecond),
		ReconnectMax:     orDefault(start.ReconnectMax, 10*time.Second),
		Prefetch:         int(start.Prefetch),
	}
	if s.Token == "" {
		s.Token = os.Getenv("TASKQ_TOKEN")
	}
	if s.Concurrency == 0 {
		s.Concurrency = 10
	}
	if s.WorkerID == "" {
		s.WorkerID = fmt.Sprintf("%s/%d/go", host, os.Getpid())
	}

	// grpc-go reconnects a dropped connection with its own backoff (1 s, then up to 120 s by default),
	// failing calls at once meanwhile: give it the worker's reconnect settings, so a stream that reopens
	// after the worker's backoff finds a connection.
	conn, err := grpc.Dial(s.Target, grpc.WithInsecure(), grpc.WithConnectParams(grpc.ConnectParams{
		Backoff: grpcbackoff.Config{
			BaseDelay: s.ReconnectInitial, Multiplier: backoffMultiplier, Jitter: backoffJitter, MaxDelay: s.ReconnectMax,
		},
		MinConnectTimeout: 5 * time.Second,
	}), grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxAnswerBytes)))
	if err != nil {
		log.Fatalf("dial %s: %v", s.Target, err)
	}
	ctx := context.Background()
	if s.Token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+s.Token)
	}
	w := NewWorker(conn, ctx, s, genericHandler)
	w.Start()
	send(&cpb.ProgramMessage{Message: &cpb.ProgramMessage_Ready{
		Ready: &cpb.Ready{Implementation: "go grpc-go stubs", Features: []string{"prefetch"}},
	}})

	stop := read(lines).GetStop()
	if stop == nil {
		log.Fatal("the runner's second message is not stop")
	}
	w.Stop(orDefault(stop.Grace, s.Grace))
	send(&cpb.ProgramMessage{Message: &cpb.ProgramMessage_Stopped{Stopped: &cpb.Stopped{}}})
	// Handlers that ignore their abort may still sleep: they hold nothing we need.
	os.Exit(0)
}
