"""`SyncClient`: the async :class:`~deskbroker.Client` for code without an event loop.

A thin wrapper: the client lives on a private event loop in a daemon thread, and each method
runs the async method of the same name there and waits for its answer. It works from plain
scripts and from inside a running event loop (a notebook) alike; errors are the async client's
(``ApiError``, ``TransportError``, ``DeskbrokerError``). Plain helpers (``session``, ``adopt``,
``endpoint``) are the client's own.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any

from .client import Client, DeskbrokerError

__all__ = ["SyncClient"]


class SyncClient:
    """``SyncClient(...)`` takes :class:`~deskbroker.Client`'s arguments (``SyncClient()``: the
    default socket). Use as a context manager, or call :meth:`close`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever,
                                        name="deskbroker-sync-client", daemon=True)
        self._thread.start()
        self._closed = False

        async def make() -> Client:
            return Client(*args, **kwargs)

        try:
            self._client = asyncio.run_coroutine_threadsafe(make(), self._loop).result()
        except BaseException:
            self._stop()
            raise

    def _run(self, coro: Any) -> Any:
        if self._closed:
            coro.close()
            raise DeskbrokerError("the SyncClient is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        member = getattr(self._client, name)
        if not inspect.iscoroutinefunction(member):
            return member

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._run(member(*args, **kwargs))

        call.__name__ = name
        call.__doc__ = member.__doc__
        return call

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *(n for n in dir(self._client)
                                            if not n.startswith("_"))})

    def __repr__(self) -> str:
        return f"Sync{self._client!r}"

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the client's connections and stops its thread (idempotent)."""
        if self._closed:
            return
        try:
            self._run(self._client.aclose())
        finally:
            self._closed = True
            self._stop()

    def _stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self._loop.close()


# The async methods a SyncClient offers (for documentation and tests).
def sync_methods() -> list[str]:
    return sorted(name for name, member in inspect.getmembers(Client)
                  if not name.startswith("_") and inspect.iscoroutinefunction(member)
                  and name != "aclose")
