"""Progress lines when stderr is not a terminal (a pipe here): plain lines at the interval
(LGRECO_PROGRESS_INTERVAL, default 10 s) naming the stage, done/total, rate and ETA; a last line
when work that printed ends; nothing with --quiet or for work shorter than the interval."""
import os
import re

import pytest


def _env(interval):
    env = dict(os.environ)
    if interval is None:
        env.pop("LGRECO_PROGRESS_INTERVAL", None)
    else:
        env["LGRECO_PROGRESS_INTERVAL"] = str(interval)
    return env


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    return tmp_path_factory.mktemp("progress") / "t.h5"


def test_trace_synth_prints_plain_progress_lines_when_piped(lgreco, trace):
    p = lgreco("trace", "synth", "--model", "resnet18", "--steps", "2", "--rank-terms", "2", "-o", trace, "--force",
               env=_env(0), check=True)
    lines = [l for l in p.stderr.splitlines() if l.startswith("lgreco: trace synth: ")]
    assert len(lines) >= 2, p.stderr
    assert "\r" not in p.stderr
    for l in lines[:-1]:
        assert re.fullmatch(r"lgreco: trace synth: \d+/\d+ layer-steps \(\d+ %\), [0-9.e+]+/s, ETA \d+(\.\d)? (s|min|h)", l), l
    assert re.fullmatch(r"lgreco: trace synth: (\d+)/\1 layer-steps \(100 %\), [0-9.e+]+/s", lines[-1]), lines[-1]
    assert "wrote" in p.stdout


def test_quiet_silences_progress_and_keeps_results(lgreco, trace):
    p = lgreco("--quiet", "trace", "synth", "--model", "resnet18", "--steps", "2", "--rank-terms", "2", "-o", trace,
               "--force", env=_env(0), check=True)
    assert p.stderr == ""
    assert "wrote" in p.stdout


def test_short_work_prints_nothing_at_the_default_interval(lgreco, trace):
    p = lgreco("trace", "info", trace, env=_env(None), check=True)
    assert "lgreco: trace info" not in p.stderr


def test_replay_progress_names_windows_and_rate(lgreco, trace, tmp_path):
    p = lgreco("plan", "--trace", trace, "--family", "powersgd", "--default", "rank=2", "-o", tmp_path / "s.json",
               env=_env(0))
    assert p.returncode == 0, p.stderr
    lines = [l for l in p.stderr.splitlines() if l.startswith("lgreco: replay: ")]
    assert lines, p.stderr
    assert re.search(r"window \d+/\d+, layers \d+/\d+ \(\d+ %\), [0-9.]+ GB/s", lines[0]), lines[0]
    assert re.search(r"window (\d+)/\1, layers (\d+)/\2 \(100 %\)", lines[-1]), lines[-1]
