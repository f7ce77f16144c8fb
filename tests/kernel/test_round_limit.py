"""A run that reaches its limit of tool rounds says so: the calls of its last round show as
not run, and the record's footer names the limit."""

from __future__ import annotations


def test_the_calls_past_the_limit_show_as_not_run_and_the_footer_says_why(kernel):
    kernel.ok(
        "%config AimuMagics.max_iterations = 2\n"
        "seen = []\n"
        "def note(text: str) -> str:\n"
        "    'Note something.'\n"
        "    seen.append(text)\n"
        "    return 'noted'\n"
        "%tool note\n"
        "m = ScriptedClient([call('note', text='one'), call('note', text='two'),\n"
        "                    'Stopping here.'])"
    )
    result = kernel.execute("%%agent --model m\nNote twice.")
    assert result.status == "ok", result.error_lines
    assert kernel.value("seen") == ["one"]
    record = result.record
    first, second = [e for e in record["events"] if e["type"] == "tool"]
    assert (first["status"], first["result"]) == ("done", "noted")
    assert second["arguments"] == {"text": "two"} and second["status"] == "error"
    assert second["result"].startswith("Not executed: the limit of 2 tool rounds was reached.")
    assert record["limit"].startswith("stopped at the limit of tool rounds")
    markdown = result.bundle["text/markdown"]
    assert "stopped at the limit of tool rounds" in markdown
    assert "Stopping here." in markdown
