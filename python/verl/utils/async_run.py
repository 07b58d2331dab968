"""Coroutines run from synchronous code, with a bound on how many await at once.

The reward callback runs inside the C++ training step -- on the thread that called it, on the thread that scores
samples while the engine still generates, or on the one-step off-policy rollout thread -- itself called from plain
Python or from a coroutine (a notebook, an async application). ``run_coroutine`` runs a coroutine to completion from
any of them on one event loop, verl's, which a daemon thread runs for the process: clients an async reward function
caches stay bound to that one loop whichever thread scores next. Called from code that runs inside an event loop (a
coroutine on verl's loop calling back into synchronous code, a notebook cell), it runs the coroutine on a fresh loop
in a worker thread instead: waiting on the caller's loop would never end.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

__all__ = ["run_coroutine", "gather_bounded", "TimedOut"]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_loop_thread: threading.Thread | None = None  # runs _loop


def _shared_loop() -> asyncio.AbstractEventLoop:
    global _loop, _loop_thread
    with _lock:
        if _loop is None or _loop.is_closed() or _loop_thread is None or not _loop_thread.is_alive():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="verl-event-loop", daemon=True)
            thread.start()
            _loop, _loop_thread = loop, thread
        return _loop


def run_coroutine(coro: Coroutine[Any, Any, T]) -> T:
    """The result of ``coro`` (its exception raised here)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # plain synchronous code: verl's loop
        return asyncio.run_coroutine_threadsafe(coro, _shared_loop()).result()
    # Called from inside a running loop (verl's own, one asyncio.run below, a notebook's): waiting here blocks that
    # loop, so the coroutine gets a fresh loop in a worker thread.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


class TimedOut:
    """In ``gather_bounded``'s results: the awaitable at this position ran past the timeout and was cancelled
    (distinct from a ``TimeoutError`` it raised itself)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __repr__(self) -> str:
        return f"TimedOut({self.seconds}s)"


async def gather_bounded(factories: Sequence[Callable[[], Awaitable[T]]], limit: int,
                         timeout: float | None = None) -> list[T | BaseException | TimedOut]:
    """Awaits ``factory()`` for every factory, at most ``limit`` at a time, in input order: each result, the
    ``Exception`` it raised, or ``TimedOut`` when it ran past ``timeout`` seconds (counted from its start)."""
    semaphore = asyncio.Semaphore(limit)

    async def one(factory: Callable[[], Awaitable[T]]) -> T | TimedOut:
        async with semaphore:
            task = asyncio.ensure_future(factory())
            if not timeout or timeout <= 0:
                return await task
            done, _ = await asyncio.wait({task}, timeout=timeout)
            if not done:
                task.cancel()
                return TimedOut(timeout)
            return task.result()

    return await asyncio.gather(*(one(f) for f in factories), return_exceptions=True)
