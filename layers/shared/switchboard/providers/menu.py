"""Reply buttons or a list as a numbered text menu: how a kind whose WhatsApp server does not
deliver interactive messages sends one, the customer answering with the option's number.

Unofficial WhatsApp servers send buttons and lists as protocol messages that WhatsApp's own
servers and apps have stopped showing to most recipients (asternic/wuzapi `handlers.go`
`SendButtons`: "not implemented, does not work"; tulir/whatsmeow #305: list and button messages
appear only at the sender; #439: a list refused with error 405). A text always arrives.
`choice_for` reads the customer's answer back: the number typed, alone on its line.
"""

from __future__ import annotations

import re

from switchboard.providers.content import Interactive, Option

_ANSWER = re.compile(r"^\s*\*?\s*(\d{1,2})\s*[.)]?\s*\*?\s*$")


def text_menu(content: Interactive) -> str:
    """The message's text: its header (bold), body, the options numbered from 1 (a list's section
    titles above their rows), its footer (italics)."""
    lines: list[str] = []
    if content.header:
        lines += [f"*{content.header}*", ""]
    lines += [content.body, ""]
    number = 0
    if content.kind == "buttons":
        for option in content.buttons:
            number += 1
            lines.append(_line(number, option))
    else:
        for index, section in enumerate(content.sections):
            if section.title:
                if index:
                    lines.append("")
                lines.append(f"*{section.title}*")
            for row in section.rows:
                number += 1
                lines.append(_line(number, row))
    if content.footer:
        lines += ["", f"_{content.footer}_"]
    return "\n".join(lines)


def _line(number: int, option: Option) -> str:
    return f"{number}. {option.title}" + (f" — {option.description}" if option.description else "")


def choice_for(text: str, options: list[Option]) -> Option | None:
    """The option a typed answer names by its number (`2`, `2.`, `*2*`), else None."""
    match = _ANSWER.match(text)
    if match is None:
        return None
    index = int(match.group(1))
    return options[index - 1] if 1 <= index <= len(options) else None
