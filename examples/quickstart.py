"""Quick start: an agent with one tool, streamed to the terminal.

Runs offline on the scripted model; pass a model name (``python examples/quickstart.py
openai:gpt-4o-mini``) to use a real one.
"""

import sys

import aimu
from aimu.models.providers.scripted import ScriptedClient, call, reply


@aimu.tool
def letter_counter(word: str, letter: str) -> int:
    """Count how often a letter occurs in a word (case-insensitive).

    Args:
        word: The word to search.
        letter: The single letter to count.
    """
    return word.lower().count(letter.lower())


def main() -> None:
    if len(sys.argv) > 1:
        model = aimu.client(sys.argv[1])
    else:
        model = ScriptedClient(
            [
                reply(
                    "Let me count.",
                    tool_calls=[call("letter_counter", word="strawberry", letter="r")],
                ),
                "There are 3 r's in strawberry.",
            ]
        )
        print("(scripted model: offline demo)\n")
    agent = aimu.Agent(model, tools=[letter_counter])
    for chunk in agent.run("How many r's are in strawberry?", stream=True):
        if chunk.phase is aimu.Phase.TEXT:
            print(chunk.content, end="", flush=True)
        elif chunk.phase is aimu.Phase.TOOL_CALL:
            print(f"\n[tool] {chunk.content['name']}({chunk.content['arguments']})")
        elif chunk.phase is aimu.Phase.TOOL_RESULT:
            print(f"[result] {chunk.content['result']}")
        elif chunk.phase is aimu.Phase.DONE:
            print(f"\n\n[done: {chunk.content['stop_reason']}, usage {chunk.content['usage']}]")


if __name__ == "__main__":
    main()
