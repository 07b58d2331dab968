"""check_correctness calls call_sandbox_api by keyword, as verl does: a replacement that reads its arguments by
name (verl's tests patch it with side effects taking **kwargs) sees each case's stdin, and one that raises costs only
its own case, recorded as an API error."""

from unittest.mock import patch

from verl.utils.reward_score.sandbox_fusion import utils as sf_utils

TARGET = "verl.utils.reward_score.sandbox_fusion.utils.call_sandbox_api"


def _echo(**kwargs):
    """A sandbox that prints the doubled stdin; keyword-only, so a positional call would raise TypeError."""
    doubled = str(2 * int(kwargs["stdin"]))
    return {"status": "Success", "run_result": {"status": "Finished", "stdout": doubled + "\n", "return_code": 0}}, None


def test_every_argument_arrives_by_name():
    calls = []

    def sandbox(**kwargs):
        calls.append(kwargs)
        return _echo(**kwargs)

    with patch(TARGET, side_effect=sandbox):
        results, meta = sf_utils.check_correctness("http://sandbox.invalid/run_code", {"inputs": ["1", "2", "3"],
                                                   "outputs": ["2", "5", "6"]}, "print(2*int(input()))", timeout=7,
                                                   memory_limit_mb=256, language="python")
    assert results == [True, False, True]
    assert [m["status"] for m in meta] == ["success", "wrong_answer", "success"]
    assert sorted(c["stdin"] for c in calls) == ["1", "2", "3"]
    for call in calls:
        assert set(call) == {"sandbox_fusion_url", "code", "stdin", "compile_timeout", "run_timeout",
                             "memory_limit_mb", "language"}
        assert call["compile_timeout"] == 7 and call["run_timeout"] == 7 and call["memory_limit_mb"] == 256
        assert call["code"] == "print(2*int(input()))\n\n"


def test_a_raising_sandbox_call_is_that_case_api_error():
    def sandbox(**kwargs):
        if kwargs["stdin"] == "4":
            raise ConnectionResetError("peer went away")
        return _echo(**kwargs)

    with patch(TARGET, side_effect=sandbox):
        results, meta = sf_utils.check_correctness("http://sandbox.invalid/run_code",
                                                   {"inputs": ["3", "4", "5"], "outputs": ["6", "8", "10"]}, "x")
    assert results == [True, -1, True]
    assert meta[1]["status"] == "api_error"
    assert meta[1]["api_request_error"] == ("API Request Exception during check_correctness for case 2: "
                                            "peer went away")
