"""The runtime options of ``%%agent`` in a real kernel: talking to a running agent through
its "tell the agent…" box, --thinking / --option / --compact / --schema, %agent_usage."""

from __future__ import annotations

import uuid

from kernel_harness import Widgets

RUN_MIME = "application/vnd.aimu.run+json"

WAITING_TOOL = """\
import threading
import ipywidgets

released = threading.Event()
go = ipywidgets.Button(description="go")
go.on_click(lambda _: released.set())

async def wait_for_user() -> str:
    "Wait until the user has had their say."
    import asyncio
    await asyncio.to_thread(released.wait, 30)
    return "the user spoke"

%tool wait_for_user
m = ScriptedClient([call("wait_for_user"), "Metric it is."])
"""


def test_a_message_typed_while_the_run_goes_reaches_the_model_at_its_next_turn(kernel):
    widgets = Widgets()
    setup = kernel.ok(WAITING_TOOL, on_message=widgets.see)
    assert setup.status == "ok"
    go = widgets.button("go")
    sent = []

    def on_message(msg):
        widgets.see(msg)
        if sent or not widgets.is_inbox_box(msg):
            return
        box = widgets.find("TextModel", placeholder="tell the agent…")
        kernel.set_value(box, "Use metric")
        # Enter overtakes the last key presses, as a widget manager sends them
        kernel.send_comm(box, {"method": "custom", "content": {"event": "submit"}})
        kernel.set_value(box, "Use metric units, please.")
        kernel.click(go)  # handled after the message: the tool's wait ends
        sent.append(box)

    result = kernel.execute("%%agent --model m\nMeasure the room.", on_message=on_message)
    assert result.status == "ok", result.error_lines
    assert sent
    second = kernel.value("[(x['role'], x['content']) for x in m.requests[1]['messages']]")
    assert second[-1] == ("user", "Use metric units, please.")
    assert second[-2] == ("tool", "the user spoke")
    events = result.record["events"]
    kinds = [e["type"] for e in events]
    assert kinds == ["tool", "user_message", "text"]
    assert events[1]["text"] == "Use metric units, please."
    assert "**You, during the run:** Use metric units, please." in result.bundle["text/markdown"]
    last_box = [m for m in result.of_type("update_display_data")
                if "Told the agent" in m["content"]["data"].get("text/plain", "")]  # fmt: skip
    assert last_box, "the box was not replaced by a static note when the run ended"


def test_thinking_and_options_reach_every_request(kernel):
    kernel.ok("m = ScriptedClient([call('echo', text='x'), 'done'])")
    kernel.ok(
        "%%agent --model m --tools misc --thinking high --option temperature=0.2 "
        "--option stop='[\"END\"]' --option user=notebook\nGo."
    )
    seen = kernel.value(
        "[(r['options'].thinking, dict(r['options'].generate_kwargs)) for r in m.requests]"
    )
    expected = ("high", {"temperature": 0.2, "stop": ["END"], "user": "notebook"})
    assert seen == [expected, expected]


def test_bad_runtime_options_are_one_line_usage_errors(kernel):
    kernel.ok("m = ScriptedClient(['x'])")
    for options, words in (
        ("--thinking hard", "--thinking hard: use off, on, low, medium or high"),
        ("--option temperature", "write it as name=value"),
        ("--compact last:zero", "N must be a whole number"),
        ("--compact everything", "last:N keeps the system message"),
        ("--schema Nope", "no notebook variable is named 'Nope'"),
    ):
        result = kernel.execute(f"%%agent --model m {options}\nhi")
        assert result.reply["ename"] == "UsageError", options
        assert words in result.reply["evalue"], result.reply["evalue"]
    assert kernel.value("len(m.requests)") == 0


def test_compact_last_keeps_the_conversation_short(kernel):
    kernel.ok("m = ScriptedClient(['one', 'two', 'three'])")
    for prompt in ("first", "second", "third"):
        kernel.ok(f"%%agent --model m --compact last:2\n{prompt}")
    sent = kernel.value("[x['content'] for x in m.requests[2]['messages']]")
    # the last two turns, led by the user message they answer (a conversation starts with one)
    assert sent == ["second", "two", "third"]


def test_schema_and_out_store_a_validated_instance(kernel):
    kernel.ok(
        "import dataclasses\n"
        "@dataclasses.dataclass\n"
        "class City:\n"
        "    name: str\n"
        "    population: int\n"
        'm = ScriptedClient([\'{"name": "Lyon", "population": "many"}\','
        ' \'{"name": "Lyon", "population": 522000}\'])'
    )
    kernel.ok("%%agent --model m --schema City --out city\nLargest city of the Rhône?")
    assert kernel.value("(type(city).__name__, city.name, city.population)") == (
        "City",
        "Lyon",
        522000,
    )
    assert kernel.value("m.requests[0]['options'].response_format['name']") == "City"


def test_a_schema_runs_record_shows_the_validated_value_as_a_table(kernel):
    kernel.ok(
        "import dataclasses\n"
        "@dataclasses.dataclass\n"
        "class Signature:\n"
        "    signed_by: str\n"
        """m = ScriptedClient(['{"signed_by": "Ada Lovelace"}'])"""
    )
    result = kernel.ok("%%agent --model m --schema Signature\nWho signed it?")
    (answer,) = [e for e in result.record["events"] if e["type"] == "text"]
    assert answer == {
        "type": "text",
        "text": '{"signed_by": "Ada Lovelace"}',
        "output": {"signed_by": "Ada Lovelace"},
    }
    markdown = result.bundle["text/markdown"]
    assert "| field | value |\n| --- | --- |\n| signed_by | Ada Lovelace |" in markdown
    assert '{"signed_by"' not in markdown


def test_agent_usage_adds_up_each_conversation(kernel):
    kernel.ok("m = ScriptedClient([call('echo', text='a'), 'one', 'two', 'other'])")
    kernel.ok("%%agent --model m --tools misc\nfirst")
    kernel.ok("%%agent --model m\nsecond")
    kernel.ok("%%agent --model m --name side\nthird")
    result = kernel.ok("%agent_usage")
    (shown,) = [m["content"]["data"] for m in result.of_type("display_data")]
    rows = [line.split() for line in shown["text/plain"].splitlines()]
    assert rows[0][0] == "conversation"
    assert rows[1][:4] == ["default", "2", "3", "1"]
    assert rows[2][:4] == ["side", "1", "1", "0"]
    assert "| default | 2 | 3 | 1 |" in shown["text/markdown"]


def test_a_headless_run_has_no_box(kernel):
    kernel.ok("m = ScriptedClient([call('echo', text='a'), 'done'])")
    result = kernel.execute("%%agent --model m --tools misc\ngo", allow_stdin=False)
    assert result.status == "ok", result.error_lines
    opened = [m["content"]["data"]["state"] for m in result.of_type("comm_open")]
    assert not [s for s in opened if s.get("placeholder") == "tell the agent…"]
    assert result.record["status"] == "done"


def test_run_agent_from_python_takes_the_same_options(kernel):
    kernel.ok(
        "from typing import TypedDict\n"
        "class Pair(TypedDict):\n"
        "    left: str\n"
        "    right: str\n"
        'm = ScriptedClient([\'{"left": "a", "right": "b"}\'])\n'
        "import aimu_jupyter\n"
        "pair = await aimu_jupyter.run_agent('pair?', model=m, schema=Pair, thinking='low',"
        " generate_kwargs={'seed': 3}, compaction='last:4')"
    )
    assert kernel.value("pair") == {"left": "a", "right": "b"}
    assert kernel.value("m.requests[0]['options'].thinking") == "low"
    assert kernel.value("dict(m.requests[0]['options'].generate_kwargs)") == {"seed": 3}


def test_the_lab_extensions_field_claims_the_inbox_and_leaves_no_box_behind(kernel):
    """What the extension does: seeing ``inbox`` in the record, it opens an ``aimu.inbox``
    comm for that run and sends the text; no widget box is shown, nothing is left over."""
    widgets = Widgets()
    kernel.ok(WAITING_TOOL, on_message=widgets.see)
    go = widgets.button("go")
    claimed = []

    def on_message(msg):
        widgets.see(msg)
        record = msg["content"].get("data", {}).get(RUN_MIME) or {}
        if claimed or not record.get("inbox"):
            return
        comm_id = uuid.uuid4().hex
        opening = {"comm_id": comm_id, "target_name": "aimu.inbox",
                   "data": {"run": record["inbox"]}}  # fmt: skip
        kernel.client.shell_channel.send(kernel.client.session.msg("comm_open", opening))
        kernel.send_comm(comm_id, {"text": "Use metric units, please."})
        kernel.click(go)
        claimed.append(record["inbox"])

    result = kernel.execute("%%agent --model m\nMeasure the room.", on_message=on_message)
    assert result.status == "ok", result.error_lines
    assert claimed
    second = kernel.value("[(x['role'], x['content']) for x in m.requests[1]['messages']]")
    assert second[-1] == ("user", "Use metric units, please.")
    assert not [m for m in result.of_type("comm_open") if widgets.is_inbox_box(m)]
    assert result.record["inbox"] is None and result.record["status"] == "done"
    displayed = result.of_type("display_data")
    assert [RUN_MIME in m["content"]["data"] for m in displayed] == [True]  # the record alone


def test_a_claim_for_an_unknown_run_is_refused(kernel):
    kernel.ok(
        "import aimu_jupyter.view._inbox_field as f\n"
        "sent = []\n"
        "class Comm:\n"
        "    def send(self, data): sent.append(data)\n"
        "    def close(self): sent.append('closed')\n"
        "    def on_msg(self, callback): sent.append('listening')\n"
        "fields = f.InboxFields(get_ipython().kernel)\n"
        "fields._opened(Comm(), {'content': {'data': {'run': 'nope'}}})\n"
        "fields._opened(Comm(), {'content': {'data': ['not', 'a', 'dict']}})\n"
        "fields._opened(Comm(), {'content': None})"
    )
    # Refused, not closed: the extension that opened the comm closes it.
    assert kernel.value("sent") == [{"draw": False}] * 3
