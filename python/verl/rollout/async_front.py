"""The asyncio front of ``verl._C.rollout.AsyncEngine``: ``LLM.generate_async`` / ``LLM.generate_stream``.

The C++ engine thread keeps stepping over every request in flight and never takes the GIL; it queues token and
completion events and writes a byte to a pipe. The event loop watches the pipe (``loop.add_reader``) and, when it
is readable, drains the queue here: each completion resolves its asyncio future, each token goes to its stream.
One front serves one event loop at a time (the one running when the first request was submitted).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable

from verl import _C


@dataclass
class TokenDelta:
    """One generated token of a streamed request, as it is sampled."""

    request_id: int
    index: int  # the sample (0 .. n-1)
    token_id: int
    logprob: float


class AsyncFront:
    def __init__(self, engine: Any, convert: Callable[[Any], Any]) -> None:
        self._cpp = _C.rollout.AsyncEngine(engine)
        self._convert = convert  # C++ RequestOutput -> verl.rollout.RequestOutput
        self._loop: asyncio.AbstractEventLoop | None = None
        self._futures: dict[int, asyncio.Future] = {}
        self._streams: dict[int, asyncio.Queue] = {}
        self._holding = False  # the engine is held until this loop iteration's end (submit)

    @property
    def num_in_flight(self) -> int:
        return self._cpp.num_in_flight

    def _attach(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            if self._loop is not None and not self._loop.is_closed() and self._futures:
                raise RuntimeError("LLM: async requests of another event loop are still in flight")
            if self._loop is not None and not self._loop.is_closed():
                self._loop.remove_reader(self._cpp.fileno())
            loop.add_reader(self._cpp.fileno(), self._drain)
            self._loop = loop
            if self._holding:  # held by a loop that closed before its iteration ended
                self._release()
        return loop

    def _drain(self) -> None:
        for event in self._cpp.drain():
            request_id = event[1]
            if event[0] == "token":
                queue = self._streams.get(request_id)
                if queue is not None:
                    queue.put_nowait(TokenDelta(request_id, event[2], event[3], event[4]))
                continue
            future = self._futures.pop(request_id, None)
            try:
                result = self._convert(self._cpp.take(request_id))
            except Exception as e:  # the engine's error, with its verl.errors class
                if future is not None and not future.done():
                    future.set_exception(e)
            else:
                if future is not None and not future.done():
                    future.set_result(result)
            queue = self._streams.get(request_id)
            if queue is not None:
                queue.put_nowait(None)  # end of stream

    def submit(self, prompt_token_ids: list[int], params: Any, stream: bool) -> tuple[int, asyncio.Future]:
        loop = self._attach()
        future = loop.create_future()
        if not self._holding:
            # The engine starts no step until this loop iteration ends: the requests its other tasks submit now
            # (a batch's agent loops, started together) enter one step, as one batch, whatever the thread timing.
            self._cpp.hold()
            self._holding = True
            loop.call_soon(self._release)
        request_id = self._cpp.submit(prompt_token_ids, params, stream)
        # The completion is drained by this loop's reader, never before this line runs on the same thread.
        self._futures[request_id] = future
        if stream:
            self._streams[request_id] = asyncio.Queue()
        return request_id, future

    async def result(self, request_id: int, future: asyncio.Future) -> Any:
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            self.abort(request_id)  # a cancelled await frees the request's KV blocks at once
            raise
        finally:
            self._streams.pop(request_id, None)

    async def stream(self, request_id: int, future: asyncio.Future) -> AsyncIterator[TokenDelta]:
        queue = self._streams[request_id]
        try:
            while True:
                delta = await queue.get()
                if delta is None:
                    break
                yield delta
            future.result()  # a failed request raises its error at the end of the stream
        except (asyncio.CancelledError, GeneratorExit):
            self.abort(request_id)
            raise
        finally:
            self._streams.pop(request_id, None)

    def _release(self) -> None:
        self._holding = False
        self._cpp.release()

    def abort(self, request_id: int) -> bool:
        return self._cpp.abort(request_id)

    def close(self) -> None:
        self._cpp.close()
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._cpp.fileno())
            self._drain()
