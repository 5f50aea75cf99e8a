"""The JSON access logger on gunicorn's real logger: its own file handler gets the bare JSON line, any other
logging set-up (formatter, level, propagation) gets an ordinary log record."""

import datetime
import json
import logging

from gunicorn.config import Config

from app.server.accesslog import JsonAccessLogger


class _Resp:
    status = "200 OK"
    headers = [("Content-Type", "application/json"), ("X-Request-Id", "r" * 32)]
    sent = 123


ENV = {
    "REQUEST_METHOD": "GET",
    "PATH_INFO": "/api/v1/air-quality",
    "QUERY_STRING": "lat=51.2&lng=4.4",
    "REMOTE_ADDR": "127.0.0.1",
}


def _logger(tmp_path):
    cfg = Config()
    cfg.set("accesslog", str(tmp_path / "access.log"))
    return JsonAccessLogger(cfg)


def test_gunicorn_file_handler_gets_one_json_line(tmp_path):
    logger = _logger(tmp_path)
    logger.access(_Resp, None, ENV, datetime.timedelta(microseconds=1500))
    (line,) = (tmp_path / "access.log").read_text().splitlines()
    entry = json.loads(line)
    assert entry["path"] == "/api/v1/air-quality" and entry["status"] == 200 and entry["duration_us"] == 1500
    assert entry["request_id"] == "r" * 32


def test_a_configured_handler_keeps_its_formatter_and_level(tmp_path):
    logger = _logger(tmp_path)
    custom = logging.FileHandler(tmp_path / "custom.log")
    custom.setFormatter(logging.Formatter("ACCESS %(message)s"))
    logger.access_log.addHandler(custom)
    try:
        logger.access(_Resp, None, ENV, datetime.timedelta(microseconds=10))
        custom.flush()
        (line,) = (tmp_path / "custom.log").read_text().splitlines()
        assert line.startswith("ACCESS {") and json.loads(line[len("ACCESS ") :])["status"] == 200
        custom.setLevel(logging.WARNING)  # an access line is INFO: filtered out as logging would
        logger.access(_Resp, None, ENV, datetime.timedelta(microseconds=10))
        custom.flush()
        assert len((tmp_path / "custom.log").read_text().splitlines()) == 1
    finally:
        logger.access_log.removeHandler(custom)
        custom.close()


def test_without_own_handlers_lines_propagate(tmp_path, caplog):
    logger = _logger(tmp_path)
    log = logger.access_log
    saved = list(log.handlers), log.propagate
    for h in saved[0]:
        log.removeHandler(h)
    log.propagate = True
    try:
        with caplog.at_level(logging.INFO, logger=log.name):
            logger.access(_Resp, None, ENV, datetime.timedelta(microseconds=10))
        assert any(json.loads(r.getMessage())["status"] == 200 for r in caplog.records)
    finally:
        for h in saved[0]:
            log.addHandler(h)
        log.propagate = saved[1]


def test_gunicorn_marks_its_own_access_handlers(tmp_path):
    """JsonAccessLogger writes a line straight to gunicorn's own stream handlers, which it recognises by the
    mark gunicorn sets on them (``_gunicorn``): pinned here, so a gunicorn that stops marking them fails
    this test instead of silently sending every line through logging."""
    logger = _logger(tmp_path)
    path = str(tmp_path / "access.log")
    ours = [h for h in logger.access_log.handlers if getattr(h, "baseFilename", None) == path]
    assert len(ours) == 1 and getattr(ours[0], "_gunicorn", False) is True
    assert isinstance(ours[0], logging.StreamHandler) and ours[0].stream is not None
