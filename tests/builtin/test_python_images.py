"""execute_python_in_process sees what code draws: plots, rich reprs, and DataFrame tables."""

from __future__ import annotations

import base64
import subprocess
import sys

from aimu.tools.builtin import PythonRunner
from aimu.tools.builtin._python import make_python_in_process_tool
from aimu.tools.results import Image, ToolResult

PNG = b"\x89PNG\r\n\x1a\n"


class Dot:
    """An object that draws itself, as IPython's rich display protocol has it."""

    def _repr_png_(self) -> bytes:
        return PNG + b"dot"


class Logo:
    def _repr_svg_(self) -> str:
        return "<svg xmlns='http://www.w3.org/2000/svg'><circle r='4'/></svg>"


def test_plt_show_and_figures_left_open_become_pngs_in_order():
    run = make_python_in_process_tool()
    result = run(
        "import matplotlib.pyplot as plt\n"
        "plt.plot([1, 2]); plt.title('first'); plt.show()\n"
        "print('middle')\n"
        "plt.figure(); plt.bar(['a'], [1]); plt.xlabel('letter')"
    )
    assert isinstance(result, ToolResult)
    assert [i.description for i in result.images] == [
        "image 1: matplotlib figure: first",
        "image 2: matplotlib figure: letter",
    ]
    assert all(base64.b64decode(i.data).startswith(PNG) for i in result.images)
    lines = result.text.splitlines()
    assert lines[0].startswith("[image 1: matplotlib figure: first (PNG, ")
    assert lines[1] == "middle"
    assert lines[2].startswith("[image 2: matplotlib figure: letter (PNG, ")


def test_a_figure_as_the_final_value_is_shown_once():
    run = make_python_in_process_tool()
    result = run("import matplotlib.pyplot as plt\nfig = plt.figure()\nfig")
    assert len(result.images) == 1


def test_objects_with_rich_reprs_and_pil_images_become_images():
    from PIL import Image as PILImage

    namespace = {"dot": Dot(), "logo": Logo(), "picture": PILImage.new("RGB", (8, 4), "blue")}
    run = make_python_in_process_tool(namespace)
    dot = run("dot")
    assert dot.images[0].mime_type == "image/png"
    assert base64.b64decode(dot.images[0].data) == PNG + b"dot"
    assert dot.text.endswith("Result: <Dot, shown as image 1>")
    assert run("logo").images[0].mime_type == "image/svg+xml"
    picture = run("picture").images[0]
    assert base64.b64decode(picture.data).startswith(PNG)


def test_a_dataframe_result_is_a_compact_table():
    import pandas as pd

    run = make_python_in_process_tool({"df": pd.DataFrame({"x": range(1000), "y": range(1000)})})
    text = run("df")
    assert isinstance(text, str)
    assert "[1000 rows x 2 columns]" in text
    assert len(text.splitlines()) < 20


def test_code_without_images_still_returns_plain_text():
    assert make_python_in_process_tool()("1 + 1") == "Result: 2"


def test_the_tool_never_imports_matplotlib_unless_the_code_does():
    script = (
        "import sys\n"
        "from aimu.tools.builtin._python import make_python_in_process_tool\n"
        "run = make_python_in_process_tool()\n"
        "run('x = sum(range(5))')\n"
        "print('matplotlib' in sys.modules, 'PIL' in sys.modules, 'pandas' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "False False False"


def test_the_callers_backend_is_put_back_after_a_run():
    import matplotlib.pyplot as plt

    plt.switch_backend("svg")
    try:
        make_python_in_process_tool()("import matplotlib.pyplot as plt\nplt.plot([1])")
        assert plt.get_backend() == "svg"
    finally:
        plt.switch_backend("agg")


def test_the_callers_open_figures_are_neither_captured_nor_closed():
    import matplotlib.pyplot as plt

    mine = plt.figure()
    try:
        result = make_python_in_process_tool()(
            "import matplotlib.pyplot as plt\nplt.figure(); plt.plot([1, 2]); plt.show()"
        )
        assert len(result.images) == 1
        assert plt.fignum_exists(mine.number)
        assert plt.get_fignums() == [mine.number]
    finally:
        plt.close("all")


def test_an_image_is_the_first_picture_in_a_mime_bundle():
    encoded = base64.b64encode(PNG).decode()
    png = Image.from_bundle({"text/plain": "<Dot>", "image/png": encoded[:8] + "\n" + encoded[8:]})
    assert (png.mime_type, png.description, base64.b64decode(png.data)) == (
        "image/png",
        "image/png",
        PNG,
    )
    svg = Image.from_bundle({"image/svg+xml": "<svg/>"}, "shown")
    assert (svg.description, base64.b64decode(svg.data)) == ("shown", b"<svg/>")
    assert Image.from_bundle({"image/jpeg": b"\xff\xd8\xff"}).mime_type == "image/jpeg"
    assert Image.from_bundle({"text/plain": "no picture"}) is None


def test_a_python_runner_is_public_for_building_another_in_process_tool():
    runner = PythonRunner(allowed_imports=["sympy"])
    assert runner("x = 2\nx * 3").text == "Result: 6"
    fields = runner.doc_fields()
    assert "sympy" in fields["importable"] and fields["chars"] == "16,000"
