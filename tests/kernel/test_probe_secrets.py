"""Secrets written inline in cells stay out of what the notebook tools show the model."""

TOKEN = "tok9f8e7d6c5b4a3210Secret"


def test_a_secret_passed_inline_or_in_a_dict_or_a_url_is_hidden_from_the_model(kernel):
    kernel.ok(
        "settings = {'api_key': 'sk-inline-dict-98765', 'retries': 3}\n"
        "def connect(**options):\n    return options\n"
        "connect(api_key='sk-inline-call-12345', base_url='http://alice:pw-hunter22@db.local/x')"
    )
    kernel.ok(
        "calls = [call('describe_variable', {'name': 'settings'}), call('read_cells', count=3)]\n"
        "m = ScriptedClient([reply(tool_calls=calls), 'ok'])"
    )
    result = kernel.ok("%%agent --model m --tools notebook\nlook")
    settings, cells = (e["result"] for e in result.record["events"][:2])
    assert "'retries': 3" in settings and "[hidden]" in settings
    assert "connect(" in cells and "alice" in cells
    sent = kernel.value("repr(m.requests[1]['messages'])")
    for secret in ("sk-inline-dict-98765", "sk-inline-call-12345", "pw-hunter22"):
        assert secret not in settings + cells + sent, secret


MEASURED_LEAKS = {
    'headers = {"Authorization": "Bearer hdrA1b2c3d4e5f6g7h8"}': ["hdrA1b2c3d4e5f6g7h8"],
    'token_bytes = dict(api_key=b"bytes-secret-9z8y7x6w")': ["bytes-secret-9z8y7x6w"],
    '!curl -s -H "Authorization: Bearer curlZ9y8x7w6v5u4" http://127.0.0.1:9/ || true': [
        "curlZ9y8x7w6v5u4"
    ],
    "%env OPENAI_API_KEY=sk-envline-abc123def456": ["sk-envline-abc123def456"],
    'split = ("sk-split-abc123" "def456ghi789")': ["sk-split-abc123", "def456ghi789"],
    'url = "https://api.example.com/v1?api_key=qs-secret-111aaa&client=notebook"': [
        "qs-secret-111aaa"
    ],
    'callback = "https://x.example/cb?access_token=at-secret-222bbb&page=2"': ["at-secret-222bbb"],
}
NOT_SECRETS = (
    "GIT_AUTHOR_NAME = 'Ada Lovelace'\nKEYBOARD = 'dvorak-programmer'\n"
    "ua = {'X-Client-Name': 'notebook'}"
)


def test_each_measured_leak_in_a_cell_is_hidden_and_nothing_else_is(kernel):
    for cell in MEASURED_LEAKS:
        kernel.ok(cell)
    kernel.ok(NOT_SECRETS)
    kernel.ok(
        "calls = [call('read_cells', count=10), call('describe_variable', {'name': 'url'}),"
        " call('describe_variable', {'name': 'split'})]\n"
        "m = ScriptedClient([reply(tool_calls=calls), 'ok'])"
    )
    result = kernel.ok("%%agent --model m --tools notebook\nlook")
    cells, url, split = (e["result"] for e in result.record["events"][:3])
    sent = kernel.value("repr(m.requests[1]['messages'])")
    for secrets in MEASURED_LEAKS.values():
        for secret in secrets:
            assert secret not in cells + url + split + sent + str(result.record), secret
    assert "Authorization: Bearer [hidden]" in cells
    assert "api_key=[hidden]&client=notebook" in url
    assert "'Ada Lovelace'" in cells and "'dvorak-programmer'" in cells
    assert "'X-Client-Name': 'notebook'" in cells


def test_agent_fix_hides_a_query_string_secret_in_the_traceback(kernel):
    failing = (
        "def fetch():\n"
        "    raise ConnectionError('GET https://h.example/v1?api_key=tb-secret-333ccc"
        "&access_token=tb-secret-444ddd&client=notebook failed')\n"
        "fetch()"
    )
    assert kernel.execute(failing).status == "error"
    kernel.ok("m = ScriptedClient(['Check the key.'])")
    kernel.ok("%agent_fix --model m")
    prompt = kernel.value("m.requests[0]['messages'][-1]['content']")
    assert "ConnectionError" in prompt and "client=notebook" in prompt
    assert "tb-secret-333ccc" not in prompt and "tb-secret-444ddd" not in prompt
    assert "api_key=[hidden]&access_token=[hidden]" in prompt


def test_a_token_in_the_models_url_is_not_in_the_record_or_its_footer(kernel):
    model = f"openai:m@http://{TOKEN}@127.0.0.1:9/v1"
    result = kernel.execute(f"%%agent --model {model}\nhi")
    assert result.status == "error"
    record, bundle = result.record, result.bundle
    assert record["model"] == "openai:m@http://[hidden]@127.0.0.1:9/v1"
    assert "[hidden]@127.0.0.1:9/v1" in bundle["text/plain"].splitlines()[-1]
    outputs = [m for m in result.messages if m["msg_type"] != "execute_input"]  # the cell itself
    shown = str(record) + bundle["text/markdown"] + bundle["text/plain"] + str(outputs)
    assert TOKEN not in shown


def test_words_that_only_contain_a_secret_name_are_not_hidden():
    from aimu_jupyter.kernel_tools._notebook import redact_secrets

    text = (
        "KeyError: 'Revenue'\nmonkey_business = 'fine'\nauthor: 'Ada'\n"
        "GIT_AUTHOR_NAME=Ada KEYBOARD=us https://h.example/?client=notebook\n"
        "X-Client-Name: notebook\ndef f(token: str): ..."
    )
    assert redact_secrets(text, {}) == text
    hidden = redact_secrets("api_keys = 'sk-1'\nauth_token: 'abc'", {})
    assert hidden == "api_keys = '[hidden]'\nauth_token: '[hidden]'"
