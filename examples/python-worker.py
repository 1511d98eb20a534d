"""A taskq worker in Python from the .proto files alone (grpcio): claim jobs, settle them.

    npm start                                   # the gateway, in another terminal
    python3 examples/python-worker.py           # needs grpcio and grpcio-tools (Debian: python3-grpcio python3-grpc-tools)

Environment: TASKQ_GRPC_ADDR (default 127.0.0.1:7070), TASKQ_QUEUE (default emails), TASKQ_TOKEN (a
bearer token with the worker and producer roles, when the gateway requires one), TASKQ_ONCE (stop
after this many jobs; default: run until interrupted). For a gateway serving TLS: TASKQ_CA_FILE (the
CA that signed its certificate, PEM), and with mutual TLS TASKQ_CERT_FILE and TASKQ_KEY_FILE.

The stubs are generated at start from proto/ (the same recipe as the conformance kit's Python adapter).
"""

import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "conformance" / "adapters" / "python"))
from stubs import load_stubs  # noqa: E402

load_stubs()
import grpc  # noqa: E402
from google.protobuf import duration_pb2  # noqa: E402
from taskq.v1 import job_pb2, producer_pb2, producer_pb2_grpc, worker_pb2, worker_pb2_grpc  # noqa: E402


def channel() -> grpc.Channel:
    addr = os.environ.get("TASKQ_GRPC_ADDR", "127.0.0.1:7070")
    ca = os.environ.get("TASKQ_CA_FILE")
    if not ca:
        return grpc.insecure_channel(addr)
    read = lambda name: pathlib.Path(os.environ[name]).read_bytes() if os.environ.get(name) else None  # noqa: E731
    creds = grpc.ssl_channel_credentials(
        root_certificates=read("TASKQ_CA_FILE"),
        private_key=read("TASKQ_KEY_FILE"),
        certificate_chain=read("TASKQ_CERT_FILE"),
    )
    return grpc.secure_channel(addr, creds)


def main() -> None:
    queue = os.environ.get("TASKQ_QUEUE", "emails")
    once = int(os.environ.get("TASKQ_ONCE", "0"))
    token = os.environ.get("TASKQ_TOKEN")
    metadata = [("authorization", f"Bearer {token}")] if token else []
    ch = channel()
    producer = producer_pb2_grpc.ProducerServiceStub(ch)
    worker = worker_pb2_grpc.WorkerServiceStub(ch)

    enqueued = producer.Enqueue(
        producer_pb2.EnqueueRequest(job=producer_pb2.JobSpec(queue=queue, payload=b'{"to":"ada@example.com"}')),
        metadata=metadata,
    )
    print(f"enqueued job {enqueued.job_id}", flush=True)

    done = 0
    # One poll per ClaimOnce; max_wait long-polls instead of spinning when the queue is empty.
    while not once or done < once:
        res = worker.ClaimOnce(
            worker_pb2.ClaimRequest(
                queues=[queue], max_jobs=10, max_wait=duration_pb2.Duration(seconds=5), worker_id="python-example"
            ),
            metadata=metadata,
        )
        for v in res.throttled:
            print(f"queue {v.queue} throttled: {job_pb2.ThrottleReason.Name(v.reason)}", flush=True)
        if not res.jobs:
            continue
        settlements = [
            worker_pb2.Settlement(
                lease=worker_pb2.LeaseRef(job_id=j.id, attempt=j.attempt),
                success=worker_pb2.Success(result=b"sent"),
            )
            for j in res.jobs
        ]
        # Settle is a bidi stream: one request here, one response back.
        (answer,) = list(worker.Settle(iter([worker_pb2.SettleRequest(settlements=settlements)]), metadata=metadata))
        for j, r in zip(res.jobs, answer.results):
            print(f"job {j.id} attempt {j.attempt}: {worker_pb2.SettleStatus.Name(r.status)}", flush=True)
        done += len(res.jobs)


if __name__ == "__main__":
    main()
