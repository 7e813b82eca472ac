"""Cached build steps shared by two builds at once (two checkouts' `make test` on one machine)."""

import multiprocessing
import os
import time

from bundler import steps


def build_step(cache, log, results):
    def produce(tmp):
        with open(log, "a", encoding="utf-8") as handle:
            handle.write("%d\n" % os.getpid())
        # Long enough for the other build to reach the same step while this one is in it.
        time.sleep(0.5)
        with open(os.path.join(tmp, "out"), "w", encoding="utf-8") as handle:
            handle.write("made by %d" % os.getpid())

    runner = steps.Steps(cache)
    final = runner.run("image-operator-0.1.0", "key-1", produce)
    with open(os.path.join(final, "out"), encoding="utf-8") as handle:
        results.put((final, handle.read(), len(runner.ran), len(runner.reused)))


def test_two_builds_at_once_run_a_step_once_and_share_it(tmp_path):
    cache, log = str(tmp_path / "cache"), str(tmp_path / "produced")
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    builds = [context.Process(target=build_step, args=(cache, log, results)) for build_number in range(2)]
    for build in builds:
        build.start()
    for build in builds:
        build.join(30)
        assert build.exitcode == 0
    outcomes = sorted(results.get(timeout=5) for build in builds)
    with open(log, encoding="utf-8") as handle:
        producers = handle.read().split()
    assert len(producers) == 1
    assert outcomes[0][:2] == outcomes[1][:2] == (os.path.join(cache, "steps", "image-operator-0.1.0"),
                                                  "made by " + producers[0])
    assert sorted(outcome[2:] for outcome in outcomes) == [(0, 1), (1, 0)]


def test_a_changed_key_runs_the_step_again_under_the_lock(tmp_path):
    runner = steps.Steps(str(tmp_path / "cache"))
    calls = []
    runner.run("one", "k1", calls.append)
    runner.run("one", "k1", calls.append)
    final = runner.run("one", "k2", calls.append)
    assert len(calls) == 2
    assert runner.stamp_of("one") == "k2"
    assert sorted(os.listdir(os.path.dirname(final))) == ["one", "one.lock"]
