"""Settles over one Settle stream. Requests are answered in order, so a FIFO of in-flight batches
pairs each response with its request. When the stream fails, unanswered settlements are re-sent on a
new stream with the same lease (settles are idempotent); an answered settle, accepted or refused, is
final and never re-sent."""

import collections
import sys
import threading
import time

import grpc
from backoff import Backoff
from bidi import Bidi
from taskq.v1 import worker_pb2


class Settler:
    def __init__(self, stub, metadata, backoff: Backoff) -> None:
        self._stub = stub
        self._metadata = metadata
        self._backoff = backoff
        self._cond = threading.Condition()
        self._pending: collections.deque = collections.deque()  # (settlement, on_answer)
        self._closed = False
        self._unanswered = 0
        self._thread = threading.Thread(target=self._run, name="settler", daemon=True)
        self._thread.start()

    def settle(self, settlement, on_answer) -> None:
        """Queue one settlement; on_answer(result or None) runs once it is answered (None: given up)."""
        with self._cond:
            self._pending.append((settlement, on_answer))
            self._unanswered += 1
            self._cond.notify_all()

    def close(self, deadline: float) -> None:
        """Wait until everything is answered or time.monotonic() passes deadline; then stop."""
        with self._cond:
            while self._unanswered > 0 and time.monotonic() < deadline:
                self._cond.wait(deadline - time.monotonic())
            self._closed = True
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
            stream = Bidi(lambda it: self._stub.Settle(it, metadata=self._metadata))
            inflight: collections.deque = collections.deque()
            try:
                while not self._closed:
                    with self._cond:
                        while not self._pending and not inflight and not self._closed:
                            self._cond.wait(0.5)
                        batch = list(self._pending)
                        self._pending.clear()
                    if batch:
                        inflight.append(batch)
                        stream.send(worker_pb2.SettleRequest(settlements=[s for s, _ in batch]))
                    if inflight:
                        response = stream.recv()  # on failure the batch stays in flight, to re-send
                        self._answer(inflight.popleft(), response)
                stream.close()
                return
            except (grpc.RpcError, EOFError) as err:
                stream.cancel()
                if isinstance(err, grpc.RpcError) and err.code() == grpc.StatusCode.INVALID_ARGUMENT and inflight:
                    # Re-sending a refused batch would fail forever: give it up (its leases expire).
                    for _, on_answer in inflight.popleft():
                        self._done(on_answer, None)
                with self._cond:
                    for batch in reversed(inflight):
                        self._pending.extendleft(reversed(batch))
                print(f"settle stream failed ({err}); reconnecting", file=sys.stderr)
                time.sleep(self._backoff.next())

    def _answer(self, batch, response) -> None:
        self._backoff.reset()
        for i, (_, on_answer) in enumerate(batch):
            self._done(on_answer, response.results[i] if i < len(response.results) else None)

    def _done(self, on_answer, result) -> None:
        on_answer(result)
        with self._cond:
            self._unanswered -= 1
            self._cond.notify_all()
