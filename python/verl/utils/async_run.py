"""Coroutines run from synchronous code, with a bound on how many await at once.

The reward callback runs inside the C++ training step, itself called from plain Python or from a coroutine (a
notebook, an async application). ``run_coroutine`` runs a coroutine to completion either way: on this thread's
own event loop (kept across calls, so clients an async reward function caches stay bound to one loop), or, when a
loop is already running on this thread, on a fresh loop in a worker thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

__all__ = ["run_coroutine", "gather_bounded", "TimedOut"]

T = TypeVar("T")

_local = threading.local()


def _thread_loop() -> asyncio.AbstractEventLoop:
    loop = getattr(_local, "loop", None)
    if loop is None or loop.is_closed():
        loop = _local.loop = asyncio.new_event_loop()
    return loop


def run_coroutine(coro: Coroutine[Any, Any, T]) -> T:
    """The result of ``coro`` (its exception raised here)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _thread_loop().run_until_complete(coro)
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
