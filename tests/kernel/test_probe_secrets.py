"""Secrets written inline in cells stay out of what the notebook tools show the model."""


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


def test_words_that_only_contain_a_secret_name_are_not_hidden():
    from aimu_jupyter.notebook_tools import redact_secrets

    text = "KeyError: 'Revenue'\nmonkey_business = 'fine'\nauthor: 'Ada'"
    assert (
        redact_secrets(text, {}) == "KeyError: 'Revenue'\nmonkey_business = 'fine'\nauthor: 'Ada'"
    )
    hidden = redact_secrets("api_keys = 'sk-1'\nauth_token: 'abc'", {})
    assert hidden == "api_keys = '[hidden]'\nauth_token: '[hidden]'"
