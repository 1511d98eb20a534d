"""One bidi call as send()/recv(): requests go through a queue the call's iterator reads."""

import queue

_END = object()


class Bidi:
    def __init__(self, open_call) -> None:
        self._requests: queue.Queue = queue.Queue()
        self._call = open_call(self._iterate())

    def _iterate(self):
        while True:
            item = self._requests.get()
            if item is _END:
                return
            yield item

    def send(self, request) -> None:
        self._requests.put(request)

    def recv(self):
        """The next response; raises grpc.RpcError on failure, EOFError when the server ends the call."""
        try:
            return next(self._call)
        except StopIteration:
            raise EOFError("stream ended by the gateway") from None

    def close(self) -> None:
        """Half-close: no more requests."""
        self._requests.put(_END)

    def cancel(self) -> None:
        self._requests.put(_END)
        self._call.cancel()
