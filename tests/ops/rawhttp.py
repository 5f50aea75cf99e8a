"""Reading a raw HTTP/1.1 answer off a socket, for the tests that send hand-made request bytes."""

from __future__ import annotations


def parse_response(raw: bytes) -> tuple[int, dict, bytes]:
    """(status, headers with lower-case names, body) of one answer; interim 1xx answers are skipped."""
    head, _, body = raw.partition(b"\r\n\r\n")
    while head.startswith(b"HTTP/1.1 1"):  # an interim answer (100 Continue): the real one follows
        head, _, body = body.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers, body
