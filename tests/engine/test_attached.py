"""What counts as the text a prompt attached (`engine.attached`): the contents of its fenced code
blocks by CommonMark's rules, and what a front end names as attached, first."""

from __future__ import annotations

import pytest

from specgen.engine.attached import attached_text, fenced_blocks, last_user_text


@pytest.mark.parametrize(
    ("text", "blocks"),
    [
        ("no fences here", []),
        ("fix this:\n```python\ndef f():\n    return 1\n```\nthanks", ["def f():\n    return 1\n"]),
        ("~~~\na\n~~~\nand\n```js\nb\n```\n", ["a\n", "b\n"]),
        # a longer fence holds a shorter one; its close needs at least its own length
        ("````md\n```\ninner\n```\n````\n", ["```\ninner\n```\n"]),
        # a fence of the other character does not close it
        ("```\na\n~~~\nb\n```\n", ["a\n~~~\nb\n"]),
        # left open: the block runs to the end of the text
        ("```\nopen\nstill", ["open\nstill"]),
        # indented four spaces: code by indentation, not a fence
        ("    ```\nnot a block\n    ```\n", []),
        # a backtick fence whose info string holds a backtick is not a fence
        ("```a`b\nno\n```\nyes\n```\n", ["yes\n"]),
        # a closing fence may carry trailing spaces, never other text
        ("```\nx\n``` not a close\ny\n```  \n", ["x\n``` not a close\ny\n"]),
        ("```\r\nwindows\r\n```\r\n", ["windows\r\n"]),
    ],
)
def test_fenced_blocks_follow_commonmark_fences(text, blocks):
    assert fenced_blocks(text) == blocks


def test_attached_text_puts_what_a_front_end_names_first_then_the_blocks_a_blank_line_apart():
    message = "rename x to y\n```\nx = 1\n```\nand\n```\nprint(x)\n```"
    assert attached_text(message, ("piped text\n",)) == "piped text\n\n\nx = 1\n\n\nprint(x)\n"
    assert attached_text("just a question") == ""
    assert attached_text("```\n\n```", ("  \n",)) == "", "blank texts attach nothing"


def test_the_last_user_message_is_the_text_a_reply_answers():
    messages = (("system", "```\nsys\n```"), ("user", "first"), ("assistant", "ok"), ("user", "second"))
    assert last_user_text(messages) == "second"
    assert last_user_text((("system", "s"),)) == ""
