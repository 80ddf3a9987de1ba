"""Reading what the real tools show: what codex-cli 0.171's TUI drew for a
prompt a hook blocked, as it wrote it to its terminal (cursor moves between
the words, not spaces; ``harness_hooks._codex_tui``), and Claude Code's
``stream-json`` events (``harness_hooks._stream_shown``)."""

from __future__ import annotations

from tests.clients import harness_hooks

#: Codex 0.171's bytes for a hook's block (a stub hook's words).
DRAWN = (
    b"\x1b]7501;state=done:app=codex\x1b\\\x1b[?2026h\x1b[?25l\x1b[34;2H\x1b[0m\x1b[49m\x1b[K"
    b"\x1b[17;1H\x1b[1m\x1b[38;5;1;49m\xe2\x80\xa2\x1b[17;3H\x1b[22m\x1b[39;49mBlocked"
    b"\x1b[17;11Hby\x1b[17;14Hhook\x1b[18;3H\xe2\x94\x94\x1b[18;5HCurfew:\x1b[18;13HSYSMSG-WORDS"
    b"\x1b[19;3H\xe2\x94\x94\x1b[19;5HCurfew:\x1b[19;13HREASON-WORDS\x1b[19;26Huntil"
    b"\x1b[19;32H07:00\x1b[21;1H\x1b[2m  Worked for <1s"
)


def test_the_screen_s_words_are_read_with_their_spaces_and_lines() -> None:
    screen = harness_hooks._screen_text(DRAWN)
    assert "• Blocked by hook\n└ Curfew: SYSMSG-WORDS\n└ Curfew: REASON-WORDS until 07:00" in screen
    assert harness_hooks._tui_excerpt(screen) == (
        "• Blocked by hook / └ Curfew: SYSMSG-WORDS / └ Curfew: REASON-WORDS until 07:00"
    )


def test_the_check_reads_past_the_tui_s_layout() -> None:
    screen = harness_hooks._screen_text(DRAWN)
    shown = harness_hooks._squeezed(screen)
    assert harness_hooks._squeezed("Blocked by hook Curfew: SYSMSG-WORDS") in shown
    # Control: words the screen does not have are not found.
    assert harness_hooks._squeezed(harness_hooks.TUI_SHOWS["off duty"]) not in shown


#: Claude Code 2.1.197's ``-p --output-format stream-json --verbose`` lines for
#: a run whose SessionStart hook found Curfew down (trimmed to what is read).
STREAM = "\n".join(
    [
        '{"type":"system","subtype":"hook_started","hook_event":"SessionStart"}',
        '{"type":"system","subtype":"hook_response","hook_event":"SessionStart",'
        '"output":"{\\"systemMessage\\": \\"Curfew server http://127.0.0.1:1/api/v1/verdict '
        'is unreachable (ConnectionRefusedError). Policy fail_open: this passes unchecked\\"}\\n",'
        '"exit_code":0,"outcome":"success"}',
        '{"type":"system","subtype":"init","tools":["Bash"]}',
        '{"type":"assistant","message":{"content":[{"type":"text","text":"Hello."}]}}',
        '{"type":"result","subtype":"success","is_error":false,"result":"Hello."}',
    ]
)


def test_claude_code_s_stream_shows_the_answer_and_the_hook_s_warning() -> None:
    shown = harness_hooks._stream_shown(STREAM)
    assert shown.splitlines() == [
        "Hello.",
        "SessionStart: Curfew server http://127.0.0.1:1/api/v1/verdict is unreachable "
        "(ConnectionRefusedError). Policy fail_open: this passes unchecked",
    ]
    # Control: a hook that said nothing adds no line.
    quiet = STREAM.replace("systemMessage", "otherField")
    assert harness_hooks._stream_shown(quiet) == "Hello."
