"""``python -m bench.profile``: where the API's and a worker's time goes during figure 1 or figure 4.

py-spy samples one API process and one worker process (threads pool, the defaults) while the figure's
calls run, then prints each process's top frames: inclusive share (a frame and everything it called) and
self share, as a share of that process's samples. Raw stacks (py-spy's ``raw`` format, one collapsed stack
a line, readable by any flame-graph tool) are left in ``bench/results/profile-<figure>-<role>.txt``.

Samples are wall-clock per thread, idle threads left out (py-spy's default): a thread waiting for Redis's
reply still counts, in ``read_from_socket``, as does one waiting for the GIL. The figures are not timed
here (py-spy slows what it samples): ``python -m bench --only send`` and ``--only exchange`` time them.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bench import exchange, send_latency
from bench.load import Poster, open_sessions
from bench.stack import TOKEN, Stack, api, api_pid, clawbus_worker, stack

RESULTS = Path(__file__).with_name("results")
RATE_HZ = 2000
TOP = 25
WARMUP = 50  # calls that warm both processes up before sampling
# Frames every stack of a process starts with (interpreter, server and pool scaffolding): never news.
SCAFFOLDING = re.compile(
    r"runpy|click/|threading\.py|concurrent/futures|uvicorn/(main|server|_compat)|asyncio/|celery/(bin|__main__)"
)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__)
    parser.add_argument("--figure", choices=("send", "exchange"), default="send")
    parser.add_argument("--calls", type=int, default=1000, help="calls sampled (figure 4: exchanges / 7)")
    options = parser.parse_args()
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    RESULTS.mkdir(exist_ok=True)
    with (
        tempfile.TemporaryDirectory(prefix="clawbus-profile-") as tmp,
        stack(Path(tmp)) as base,
        api(base.env, base.root, processes=1) as url,  # one process: all the requests in one profile
    ):
        single = Stack(base.root, base.server, base.env, url, base.config)
        with clawbus_worker(single) as worker, single.client() as client:
            assert worker.process is not None
            calls = options.calls if options.figure == "send" else max(options.calls // 7, 10)
            call = _calls(single, options.figure, client, WARMUP + calls)
            for i in range(WARMUP):  # warm both processes up before sampling
                call(i)
            pids = {"api": api_pid(url), "worker": worker.process.pid}
            raw = {role: RESULTS / f"profile-{options.figure}-{role}.txt" for role in pids}
            with _sampling(spy, pids, raw):
                for i in range(calls):
                    call(1000 + i)
    for role, path in raw.items():
        print(f"\n== {role} during figure {1 if options.figure == 'send' else 4} ({path}) ==")
        print(top_frames(path.read_text().splitlines()))


def _calls(single: Stack, figure: str, client: object, total: int) -> Callable[[int], object]:
    """The figure's call; figure 1's ``total`` sends go to sessions opened here, before any sampling (a
    send opens none)."""
    if figure == "exchange":
        return lambda i: exchange.one_exchange(client, i)  # type: ignore[arg-type]
    keys = [f"agent:main:cron:profile-{i}" for i in range(total)]
    open_sessions(single, keys)
    poster = Poster(single.api_url, TOKEN)
    sessions = iter(keys)

    def send(_: int) -> None:
        key = next(sessions)
        args = {"sessionKey": key, "message": "ping", "timeoutSeconds": send_latency.WAIT_S}
        answer = poster.post("/tools/invoke", {"tool": "sessions_send", "args": args})
        flow_id = answer["result"]["details"]["flowId"]  # type: ignore[index]
        send_latency._settle(client, str(flow_id))  # type: ignore[arg-type]

    return send


@contextmanager
def _sampling(spy: str, pids: dict[str, int], raw: dict[str, Path]) -> Iterator[None]:
    recorders = [
        subprocess.Popen(
            [
                spy,
                "record",
                "-r",
                str(RATE_HZ),
                "-f",
                "raw",
                "-o",
                str(raw[role]),
                "--pid",
                str(pid),
                "--nonblocking",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for role, pid in pids.items()
    ]
    time.sleep(1)  # py-spy attaches
    try:
        yield
    finally:
        for recorder in recorders:
            recorder.send_signal(subprocess.signal.SIGINT)  # type: ignore[attr-defined]
        for recorder in recorders:
            recorder.wait(30)


def top_frames(lines: list[str], top: int = TOP) -> str:
    """Inclusive and self shares of the frames in py-spy ``raw`` stacks (``a;b;c <count>``)."""
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for line in lines:
        stack_text, _, samples = line.rpartition(" ")
        if not samples.isdigit():
            continue
        n = int(samples)
        total += n
        frames = [re.sub(r":\d+\)$", ")", frame) for frame in stack_text.split(";")]
        for frame in set(frames):
            inclusive[frame] += n
        own[frames[-1]] += n
    if total == 0:
        return "no samples"
    rows = [f"{total} samples; inclusive:"]
    shown = [(f, n) for f, n in inclusive.most_common() if not SCAFFOLDING.search(f)][:top]
    rows += [f"  {n / total:6.1%}  {frame}" for frame, n in shown]
    rows.append("self:")
    rows += [f"  {n / total:6.1%}  {frame}" for frame, n in own.most_common(top // 2)]
    return "\n".join(rows)


if __name__ == "__main__":
    main()
