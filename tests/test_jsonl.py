"""`pettingllms.core.jsonl`, the append-only JSON Lines files that `metrics.jsonl` and the episode cache share: a
truncated last line is dropped with a message, a whole last line missing its newline gets it, any other bad line is
the caller's error naming the line."""

import json

import pytest

from pettingllms.core import jsonl
from pettingllms.eval.episode_cache import EpisodeCache, EpisodeRecord


class LineError(Exception):
    pass


def error(number, what):
    return LineError(f"line {number}: {what}")


def test_rows_round_trip_and_a_missing_file_reads_empty(tmp_path):
    path = tmp_path / "log.jsonl"
    assert jsonl.read(path, error) == []
    jsonl.append(path, [{"a": 1}, [2, 3]])
    jsonl.append(path, ["x"])
    assert jsonl.read(path, error) == [(1, {"a": 1}), (2, [2, 3]), (3, "x")]


def test_a_truncated_last_line_is_dropped_with_a_message_and_removed_from_the_file(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text('{"step": 0}\n{"step": 1, "x')
    said = []
    assert jsonl.read(path, error, said.append) == [(1, {"step": 0})]
    assert said == [
        f"{path}: dropped a truncated last line (line 2, 14 characters; the process that wrote it was killed)"
    ]
    jsonl.append(path, [{"step": 1}])
    assert path.read_text() == '{"step": 0}\n{"step": 1}\n'


def test_a_whole_last_line_without_its_newline_is_kept_and_the_next_append_starts_a_fresh_line(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text('{"step": 0}\n{"step": 1}')
    assert [value for _, value in jsonl.read(path, error)] == [{"step": 0}, {"step": 1}]
    jsonl.append(path, [{"step": 2}])
    assert [json.loads(line) for line in path.read_text().splitlines()] == [{"step": i} for i in range(3)]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"a": 1}\n{oops\n{"b": 2}\n', "line 2: not valid JSON"),
        (b'{"a": 1}\n\xff\xfe\n', "line 2: not UTF-8 text"),
    ],
)
def test_any_other_bad_line_is_the_callers_error_naming_the_line(tmp_path, content, message):
    path = tmp_path / "log.jsonl"
    path.write_bytes(content)
    with pytest.raises(LineError, match=message):
        jsonl.read(path, error)


def test_the_metrics_log_and_the_episode_cache_both_append_on_a_fresh_line_after_a_whole_unterminated_row(
    tmp_path,
):
    from pettingllms.trainers.outputs import metrics_log

    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text('{"step": 0}')  # the newline was never written
    assert metrics_log.read(metrics) == [{"step": 0}]
    metrics_log.append(metrics, {"step": 1})
    assert metrics_log.read(metrics) == [{"step": 0}, {"step": 1}]

    cache_path = tmp_path / "episodes.jsonl"
    first = EpisodeRecord("seed/0", True, 1, {"plan": 1}, {"plan": 0}, None, {"plan": 1.0})
    second = EpisodeRecord("seed/1", False, 4, {"plan": 4}, {"plan": 1}, None, {"plan": 0.0})
    EpisodeCache(cache_path, "run").add([first])
    cache_path.write_text(cache_path.read_text().rstrip("\n"))
    EpisodeCache(cache_path, "run").add([second])
    assert EpisodeCache(cache_path, "run").records == {"seed/0": first, "seed/1": second}
