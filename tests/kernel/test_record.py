"""The run record: chunks folded into the structured transcript and its readable fallbacks."""

import json

import jsonschema

from aimu.models.chunks import Phase, StreamChunk
from aimu_jupyter.view._record import MIME_TYPE, RunRecord, call_label

TOOL = {"id": "c1", "name": "write_file", "arguments": {"path": "a.txt", "content": "hi"}}

EVENT = {
    "oneOf": [
        {
            "type": "object",
            "required": ["type", "text"],
            "properties": {
                "type": {"enum": ["text", "thinking"]},
                "text": {"type": "string"},
                "output": {"type": "object"},
            },
            "additionalProperties": False,
        },
        {
            "type": "object",
            "required": [
                "type",
                "id",
                "name",
                "arguments",
                "argument_names",
                "code",
                "status",
                "progress",
                "result",
                "is_error",
                "images",
                "images_note",
                "approval",
                "children",
            ],
            "additionalProperties": False,
            "properties": {
                "type": {"const": "tool"},
                "id": {"type": "string"},
                "name": {"type": "string"},
                "arguments": {"type": "object"},
                "argument_names": {"type": "array", "items": {"type": "string"}},
                "code": {"type": "object", "additionalProperties": {"type": "string"}},
                "status": {
                    "enum": ["awaiting_approval", "running", "done", "error", "denied", "stopped"]
                },
                "progress": {"type": "array"},
                "result": {"type": ["string", "null"]},
                "is_error": {"type": "boolean"},
                "images": {"type": "array"},
                "images_note": {"type": "string"},
                "approval": {
                    "oneOf": [
                        {"type": "null"},
                        {
                            "type": "object",
                            "required": ["approved", "reason", "by"],
                            "properties": {
                                "approved": {"type": "boolean"},
                                "reason": {"type": "string"},
                                "by": {"enum": ["user", "policy", "timeout", "always"]},
                                "chosen_at": {"type": "string"},
                            },
                        },
                    ]
                },
                "children": {"type": "array", "items": {"$ref": "#/$defs/event"}},
            },
        },
    ]
}
SCHEMA = {
    "$defs": {"event": EVENT},
    "type": "object",
    "required": ["version", "prompt", "model", "status", "error", "usage", "duration_s", "events"],
    "additionalProperties": False,
    "properties": {
        "version": {"const": 1},
        "prompt": {"type": "string"},
        "prompt_markdown": {"type": "string"},
        "model": {"type": "string"},
        "status": {"enum": ["running", "done", "interrupted", "error"]},
        "error": {"type": ["string", "null"]},
        "usage": {
            "type": "object",
            "required": ["input_tokens", "output_tokens"],
            "properties": {
                "input_tokens": {"type": "integer"},
                "output_tokens": {"type": "integer"},
            },
        },
        "duration_s": {"type": "number"},
        "events": {"type": "array", "items": {"$ref": "#/$defs/event"}},
        "inbox": {"type": ["string", "null"]},
        "run": {"type": "string"},
    },
}


def chunk(phase, content, agent="agent"):
    return StreamChunk(phase, content, agent, 1)


def done(text="", stop="complete"):
    usage = {"input_tokens": 12, "output_tokens": 34}
    return chunk(Phase.DONE, {"text": text, "usage": usage, "stop_reason": stop})


def structured_done(text, output):
    usage = {"input_tokens": 1, "output_tokens": 2}
    content = {"text": text, "usage": usage, "stop_reason": "complete", "output": output}
    return chunk(Phase.DONE, content)


def fold(chunks, **kwargs):
    record = RunRecord("prompt", "scripted:test", **kwargs)
    for item in chunks:
        record.apply(item)
    return record


def test_consecutive_text_chunks_merge_into_one_text_event():
    record = fold([chunk(Phase.TEXT, "Hel"), chunk(Phase.TEXT, "lo "), chunk(Phase.TEXT, "you")])
    assert record.events == [{"type": "text", "text": "Hello you"}]


def test_text_after_a_tool_call_starts_a_new_text_event():
    record = fold(
        [
            chunk(Phase.THINKING, "plan"),
            chunk(Phase.TEXT, "Let me look."),
            chunk(Phase.TOOL_CALL, TOOL),
            chunk(Phase.TOOL_RESULT, {**TOOL, "result": "ok", "is_error": False, "images": []}),
            chunk(Phase.TEXT, "Done."),
            done("Done."),
        ]
    )
    assert [e["type"] for e in record.events] == ["thinking", "text", "tool", "text"]
    assert record.events[2]["status"] == "done"
    assert record.events[2]["result"] == "ok"
    assert record.status == "done"
    assert record.usage == {"input_tokens": 12, "output_tokens": 34}


def test_approval_decisions_are_recorded_with_who_decided():
    record = RunRecord("p", "m")
    record.apply(chunk(Phase.TOOL_CALL, TOOL))
    record.apply(chunk(Phase.APPROVAL_REQUESTED, TOOL))
    assert record.events[0]["status"] == "awaiting_approval"
    decided = {"id": "c1", "name": "write_file", "approved": False, "reason": "not that file",
               "by": "user"}  # fmt: skip
    record.apply(chunk(Phase.APPROVAL_DECIDED, decided))
    result = {**TOOL, "result": "Tool 'write_file' was not approved", "is_error": True}
    record.apply(chunk(Phase.TOOL_RESULT, result))
    card = record.events[0]
    assert card["status"] == "denied"
    assert card["approval"] == {"approved": False, "reason": "not that file", "by": "user"}
    assert "denied: not that file" in record.markdown()
    assert "denied: not that file" in record.plain()


def test_a_timed_out_approval_reads_as_timed_out_in_every_view():
    record = RunRecord("p", "m")
    record.apply(chunk(Phase.TOOL_CALL, TOOL))
    decided = {"id": "c1", "name": "write_file", "approved": False, "reason": "no answer",
               "by": "timeout"}  # fmt: skip
    record.apply(chunk(Phase.APPROVAL_DECIDED, decided))
    assert "timed out: denied by policy" in record.markdown()
    assert "timed out: denied by policy" in record.plain()


def test_sub_agent_chunks_nest_under_the_tool_card_that_spawned_them():
    spawn = {"id": "c9", "name": "spawn_agent", "arguments": {"task": "t"}}
    inner = {"id": "k1", "name": "echo", "arguments": {"echo_string": "x"}}
    child = "agent/researcher@c9"
    record = fold(
        [
            chunk(Phase.TOOL_CALL, spawn),
            chunk(Phase.TEXT, "sub says", agent=child),
            chunk(Phase.TOOL_CALL, inner, agent=child),
            chunk(Phase.TEXT, " deeper", agent=f"{child}/helper@k1"),
            chunk(Phase.TOOL_RESULT, {**inner, "result": "x", "is_error": False}, agent=child),
            chunk(
                Phase.DONE,
                {"text": "sub says", "usage": {}, "stop_reason": "complete"},
                agent=child,
            ),
            chunk(Phase.TOOL_RESULT, {**spawn, "result": "sub says", "is_error": False}),
            done("ok"),
        ]
    )
    assert len(record.events) == 1
    card = record.events[0]
    assert card["children"][0] == {"type": "text", "text": "sub says"}
    assert card["children"][1]["name"] == "echo"
    assert card["children"][1]["children"] == [{"type": "text", "text": " deeper"}]
    assert record.status == "done"
    jsonschema.validate(record.to_json(), SCHEMA)


def test_progress_keeps_the_latest_entries_only():
    record = RunRecord("p", "m")
    record.apply(chunk(Phase.TOOL_CALL, TOOL))
    for n in range(500):
        record.apply(chunk(Phase.TOOL_PROGRESS, {"id": "c1", "name": "write_file", "progress": n}))
    progress = record.events[0]["progress"]
    assert progress[-1] == 499
    assert len(progress) == 50
    assert "> 499" in record.markdown()


def test_an_mcp_servers_progress_steps_read_as_steps_not_json():
    record = RunRecord("p", "m")
    record.apply(chunk(Phase.TOOL_CALL, TOOL))
    steps = [
        {"progress": 1.0, "total": 30.0, "message": None},
        {"progress": 2, "total": None, "message": None},
        {"progress": 3, "total": 30, "message": "copying"},
    ]
    for step in steps:
        record.apply(
            chunk(Phase.TOOL_PROGRESS, {"id": "c1", "name": "write_file", "progress": step})
        )
    assert record.events[0]["progress"] == ["1/30", "2", "3/30 · copying"]
    assert "> 3/30 · copying" in record.markdown()
    record.apply(chunk(Phase.TOOL_PROGRESS, {"id": "c1", "name": "w", "progress": {"rows": 4}}))
    assert record.events[0]["progress"][-1] == {"rows": 4}


def test_stopping_reads_stopped_by_you_on_every_open_card_whatever_it_was_doing():
    record = RunRecord("p", "m")
    record.apply(chunk(Phase.TEXT, "partial"))
    record.apply(chunk(Phase.TOOL_CALL, TOOL))
    record.apply(chunk(Phase.APPROVAL_REQUESTED, TOOL))
    record.apply(chunk(Phase.TOOL_CALL, {**TOOL, "id": "c2", "name": "run_command"}))
    record.finish("interrupted")
    waiting, running = record.events[1], record.events[2]
    for card in (waiting, running):
        assert card["status"] == "stopped"
        assert card["approval"] is None and card["result"] is None and not card["is_error"]
    assert "`write_file`** · stopped by you" in record.markdown()
    assert "`run_command`** · stopped by you" in record.markdown()
    assert "**Stopped by you.** The conversation is kept." in record.markdown()
    assert "denied" not in record.markdown().lower()
    assert record.to_json()["status"] == "interrupted"
    jsonschema.validate(record.to_json(), SCHEMA)


def test_long_results_are_folded_and_backticks_cannot_break_the_fence():
    result = "```\n" + "line\n" * 40
    record = fold(
        [
            chunk(Phase.TOOL_CALL, TOOL),
            chunk(Phase.TOOL_RESULT, {**TOOL, "result": result, "is_error": False}),
            done(),
        ]
    )
    markdown = record.markdown()
    assert "<details><summary>result (" in markdown
    assert "````\n```\nline" in markdown


def test_long_argument_values_are_folded_in_the_markdown_but_kept_in_the_record():
    arguments = {"content": "x" * 5000}
    record = fold(
        [chunk(Phase.TOOL_CALL, {"id": "c1", "name": "write_file", "arguments": arguments})]
    )
    assert "(5,000 characters)" in record.markdown()
    assert record.to_json()["events"][0]["arguments"] == arguments


def test_bundle_is_json_serialisable_and_matches_the_schema():
    record = fold(
        [
            chunk(Phase.TEXT, "hi"),
            chunk(Phase.TOOL_CALL, TOOL),
            chunk(
                Phase.TOOL_RESULT,
                {
                    **TOOL,
                    "result": "ok",
                    "is_error": False,
                    "images": [{"data": "AAAA", "mime_type": "image/png", "description": "a dot"}],
                },
            ),
            done("hi"),
        ]
    )
    bundle = json.loads(json.dumps(record.bundle()))
    assert set(bundle) == {"text/markdown", "text/plain", MIME_TYPE}
    jsonschema.validate(bundle[MIME_TYPE], SCHEMA)
    assert "![a dot](data:image/png;base64,AAAA)" in bundle["text/markdown"]
    assert "scripted:test · 12 in / 34 out tokens" in bundle["text/plain"]


def test_error_status_keeps_the_message():
    record = RunRecord("p", "m")
    record.finish("error", "the model server refused the connection")
    assert record.to_json()["error"] == "the model server refused the connection"
    assert "refused the connection" in record.markdown()


def test_a_schema_runs_answer_reads_as_a_table_of_its_validated_value_and_keeps_its_json():
    rejected = '{"signed_by": 7}'
    answer = '{"signed_by": "Ada Lovelace", "pages": 3}'
    output = {"signed_by": "Ada Lovelace", "pages": 3}
    record = fold(
        [chunk(Phase.TEXT, rejected), chunk(Phase.TEXT, answer), structured_done(answer, output)],
        structured=True,
    )
    data = record.to_json()
    jsonschema.validate(data, SCHEMA)
    assert data["events"] == [
        {"type": "text", "text": rejected},
        {"type": "text", "text": answer, "output": output},
    ]
    markdown = record.markdown()
    table = "| field | value |\n| --- | --- |\n| signed_by | Ada Lovelace |\n| pages | 3 |"
    assert table in markdown
    assert '"signed_by": "Ada Lovelace"' not in markdown
    plain = record.plain()
    assert "signed_by  Ada Lovelace\npages      3" in plain
    assert answer not in plain


def test_a_schema_runs_answer_is_printed_once_validated_as_a_table_in_a_terminal():
    from aimu_jupyter.view._terminal import TextStream

    answer = '{"signed_by": "Ada Lovelace"}'
    record = RunRecord("prompt", "scripted:test", structured=True)
    written = []
    stream = TextStream(record, written.append)
    for item in (chunk(Phase.TEXT, answer), structured_done(answer, {"signed_by": "Ada Lovelace"})):
        record.apply(item)
        stream.feed(item)
    stream.close()
    text = "".join(written)
    assert "signed_by  Ada Lovelace" in text and answer not in text


def test_code_arguments_in_the_markdown_show_bidi_and_escape_characters_not_obey_them():
    content = "ok = True\n# \u202e)(evil \x1b[2J\nprint(ok)"
    call = {"id": "w", "name": "write_file", "arguments": {"path": "a.py", "content": content},
            "code": {"content": "python"}}  # fmt: skip
    record = fold([chunk(Phase.TOOL_CALL, call), done()])
    markdown = record.markdown()
    assert "<U+202E>" in markdown and "\\x1b[2J" in markdown
    assert "\u202e" not in markdown and "\x1b" not in markdown
    assert "ok = True\n" in markdown  # the code keeps its lines
    assert record.events[0]["arguments"]["content"] == content  # the data keeps what was sent


def test_a_schema_table_escapes_each_markdown_character_once():
    output = {"folder": "C:\\data", "rule": "a|b", "tag": "<b>x</b>"}
    answer = json.dumps(output)
    record = fold([chunk(Phase.TEXT, answer), structured_done(answer, output)], structured=True)
    markdown = record.markdown()
    assert "| folder | C:\\\\data |" in markdown  # one backslash escaped once: C:\data shown
    assert "| rule | a\\|b |" in markdown
    assert "| tag | &lt;b>x&lt;/b> |" in markdown


def test_a_calls_label_is_plain_text_escaped_once_where_markdown_shows_it():
    label = call_label("python", {"code": "a = 1\nprint(a)  # [x]"})
    assert label == "python(code='a = 1\\nprint(a) # [x]')"
    record = RunRecord("go", "scripted")
    always = {"id": "c2", "name": "python", "approved": True, "by": "always", "chosen_at": label}
    for phase, content in [
        (Phase.TOOL_CALL, {"id": "c2", "name": "python", "arguments": {"code": "print(2)"}}),
        (Phase.APPROVAL_DECIDED, always),
    ]:
        record.apply(StreamChunk(phase, content, agent=record.agent))
    assert record.to_json()["events"][0]["approval"]["chosen_at"] == label
    assert "chosen at python(code='a = 1\\\\nprint(a) # \\[x\\]')" in record.markdown()


def test_a_fence_keeps_its_code_inside_whatever_the_text_or_language():
    from aimu_jupyter.view._record import fence

    block = fence("a\n````\n<script>x</script>", "py\n# Heading <img src=x>")
    lines = block.split("\n")
    assert lines[0] == "`````" and lines[-1] == "`````"
    assert fence("x", "c++") == "```c++\nx\n```"
