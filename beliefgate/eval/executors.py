"""Where grid episodes run: in this process, a local process pool, or Dask distributed.

Every executor has the same small interface (:class:`Executor`):
``map_unordered(fn, items, on_error)`` yields ``fn(item)`` for every item as soon
as it finishes, in completion order; an item whose worker died yields
``on_error(item, exc)`` instead, so that one lost worker never loses the grid.
``fn`` and the items must be picklable (a module-level function and plain data).

* :class:`InlineExecutor` -- this process, one item after the other (``--workers 1``).
* :class:`ProcessPoolExecutorBackend` -- a local pool of ``spawn``-ed processes (the
  default; ``spawn`` because JAX does not survive ``fork``).
* :class:`DaskExecutor` -- a Dask distributed cluster: an existing scheduler
  (``tcp://host:port``) or, with ``"local"``, a :class:`distributed.LocalCluster`
  of worker processes that binds 127.0.0.1 only (no dashboard).

:func:`make_executor` builds one from the CLI's ``--workers`` / ``--scheduler``.
"""

from __future__ import annotations
from beliefgate.errors import InputError

import logging
import os
import re
from typing import Any, Callable, Iterable, Iterator, Optional, Protocol

LOCAL_HOST = "127.0.0.1"


class ExecutorError(InputError):
    """Bad executor settings (worker count, scheduler address) or a scheduler that cannot be reached."""


OnError = Callable[[Any, BaseException], Any]


class Executor(Protocol):
    """Runs ``fn`` over items and yields results in completion order."""

    description: str

    def map_unordered(self, fn: Callable, items: Iterable, on_error: OnError) -> Iterator: ...

    def close(self) -> None: ...


class InlineExecutor:
    """Runs every item in this process, in order."""

    def __init__(self) -> None:
        self.description = "this process (1 worker)"
        self.workers = 1

    def map_unordered(self, fn: Callable, items: Iterable, on_error: OnError) -> Iterator:
        for item in items:
            yield fn(item)

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


#: seconds between two checks of a pool worker's parent (see :func:`exit_with_parent`)
PARENT_POLL_S = 0.5


def exit_with_parent(parent_pid: int, poll_s: float = PARENT_POLL_S) -> None:
    """Make this (worker) process end when ``parent_pid`` does, however the parent died.

    A daemon thread polls ``os.getppid()``: a killed parent re-parents its children, so
    the worker sees another parent within ``poll_s`` and leaves with ``os._exit`` (no
    cleanup that could block on the dead parent). Used as the pool's ``initializer``; a
    SIGKILLed ``eval run`` therefore leaves no worker behind, and the resource tracker,
    whose pipe the workers held too, ends once they are gone. (Linux's
    ``PR_SET_PDEATHSIG`` is not used: it fires when the *thread* that spawned the worker
    ends, which would kill the workers of a pool driven from a short-lived thread.)
    """
    import threading
    import time

    if os.getppid() != parent_pid:  # the parent died before this worker even started
        os._exit(1)

    def watch() -> None:
        while True:
            if os.getppid() != parent_pid:
                os._exit(1)
            time.sleep(poll_s)

    threading.Thread(target=watch, name="beliefgate-parent-watchdog", daemon=True).start()


class ProcessPoolExecutorBackend:
    """A local pool of ``workers`` spawned processes (:class:`concurrent.futures.ProcessPoolExecutor`).

    Every worker exits when this process dies, even by SIGKILL (:func:`exit_with_parent`).
    """

    def __init__(self, workers: int):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        if workers < 1:
            raise ExecutorError(f"--workers must be >= 1, got {workers}")
        self.workers = workers
        self.description = f"local process pool ({workers} workers)"
        self._pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=exit_with_parent, initargs=(os.getpid(),))

    def map_unordered(self, fn: Callable, items: Iterable, on_error: OnError) -> Iterator:
        from concurrent.futures import as_completed
        from concurrent.futures.process import BrokenProcessPool

        futures = {self._pool.submit(fn, item): item for item in items}
        try:
            for fut in as_completed(futures):
                try:
                    yield fut.result()
                except BrokenProcessPool as exc:  # a worker died (killed, out of memory): report, keep going
                    yield on_error(futures[fut], exc)
        finally:
            for fut in futures:
                fut.cancel()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_ADDRESS = re.compile(r"^(?:(?:tcp|tls|inproc|ws|wss)://)?[A-Za-z0-9_.\-\[\]:]+:\d{1,5}$")


def check_scheduler_address(address: str) -> str:
    """``local`` or a scheduler address ``[tcp://]host:port``; anything else raises :class:`ExecutorError`."""
    if address == "local":
        return address
    if not _ADDRESS.match(address):
        raise ExecutorError(f"--scheduler must be 'local' or a Dask scheduler address like tcp://10.0.0.5:8786, "
                            f"got {address!r}")
    return address if "://" in address else f"tcp://{address}"


class DaskExecutor:
    """Dask distributed: an existing scheduler, or a LocalCluster on 127.0.0.1 (``address="local"``)."""

    def __init__(self, address: str = "local", workers: Optional[int] = None, connect_timeout_s: float = 30.0):
        try:
            from distributed import Client, LocalCluster
        except ImportError as exc:  # the `dist` extra is not installed
            raise ExecutorError("Dask distributed is not installed: pip install 'beliefgate[dist]'") from exc
        address = check_scheduler_address(address)
        self._cluster = None
        if address == "local":
            n = workers or os.cpu_count() or 1
            if n < 1:
                raise ExecutorError(f"--workers must be >= 1, got {n}")
            self._cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host=LOCAL_HOST,
                                         dashboard_address=None, silence_logs=logging.ERROR)
            self.client = Client(self._cluster)
            self.workers = n
            self.description = f"Dask LocalCluster on {LOCAL_HOST} ({n} workers)"
        else:
            try:
                self.client = Client(address, timeout=connect_timeout_s)
            except (OSError, TimeoutError) as exc:
                raise ExecutorError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
            self.workers = len(self.client.scheduler_info().get("workers", {}))
            self.description = f"Dask cluster at {address} ({self.workers} workers)"

    def map_unordered(self, fn: Callable, items: Iterable, on_error: OnError) -> Iterator:
        from distributed import as_completed

        items = list(items)
        if not items:
            return
        futures = self.client.map(fn, items, pure=False)
        owner = {fut.key: item for fut, item in zip(futures, items)}
        try:
            for fut in as_completed(futures):
                if fut.status == "error":  # e.g. KilledWorker: the task's worker died repeatedly
                    yield on_error(owner[fut.key], fut.exception())
                else:
                    yield fut.result()
                fut.release()
        finally:
            for fut in futures:
                if not fut.done():
                    fut.cancel()

    def addresses(self) -> list:
        """The scheduler's and workers' addresses (tests check they are all on 127.0.0.1)."""
        info = self.client.scheduler_info()
        return [info["address"], *info.get("workers", {}).keys()]

    def close(self) -> None:
        self.client.close()
        if self._cluster is not None:
            self._cluster.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def make_executor(workers: Optional[int] = None, scheduler: Optional[str] = None) -> Executor:
    """The executor for ``--workers N`` / ``--scheduler ADDR|local``.

    No scheduler: a local process pool of ``workers`` (default: the CPU count), or
    this process when ``workers == 1``. ``scheduler="local"``: a Dask LocalCluster on
    127.0.0.1 with ``workers`` processes. Any other scheduler: that Dask cluster
    (``workers`` is ignored; the cluster has its own).
    """
    if workers is not None and workers < 1:
        raise ExecutorError(f"--workers must be >= 1, got {workers}")
    if scheduler is not None:
        return DaskExecutor(scheduler, workers)
    n = workers or os.cpu_count() or 1
    return InlineExecutor() if n == 1 else ProcessPoolExecutorBackend(n)
