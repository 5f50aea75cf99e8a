"""HTTP to the upstreams: one injected ``CachedSession``, timeouts, retries, a breaker, a size cap, validation.

``build_session`` makes the session (SQLite cache in WAL mode, or Redis with ``URBAN_REDIS_URL``; JSON
serializer, no global ``install_cache``);
``Upstream.get_json`` (and ``Upstream.post_json``, for IRCEL's batch ``getData``) is the only way the adapters
fetch. Every failure — refused connection, timeout, 5xx,
``Retry-After`` beyond the budget, an open breaker, an oversized, truncated or malformed body, a payload of the
wrong shape — becomes one ``UpstreamError`` naming the source; nothing else escapes.
"""

from __future__ import annotations

import email.utils
import json
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Literal, overload
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter
from requests_cache import CachedSession, SQLiteCache
from requests_cache.policy.settings import DEFAULT_IGNORED_PARAMS

from .catalog import SOURCES
from .errors import UpstreamError
from .settings import SourceSettings

SECRET_PARAMS = ("Ocp-Apim-Subscription-Key", "subscription-key")
USER_AGENT = "urban-conditions/0.1 (+https://github.com/; sources)"
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class ResponseTooLarge(requests.RequestException):
    """The body exceeded the size cap; the read was aborted."""


class BodyTimeout(requests.Timeout):
    """The body did not arrive within the read timeout."""


class PayloadError(ValueError):
    """A payload parsed as JSON but does not have the expected shape."""


class CappedAdapter(HTTPAdapter):
    """Transport adapter that reads every body by streaming, aborting past ``max_bytes`` or the read timeout.

    It sits below requests-cache, so an oversized or slow body is never cached.
    """

    def __init__(self, max_bytes: int, chunk_size: int = 65536, **kwargs):
        super().__init__(**kwargs)
        self.max_bytes = int(max_bytes)
        self.chunk_size = chunk_size

    def send(self, request, stream=False, timeout=None, verify=True, cert=None, proxies=None):
        response = super().send(
            request, stream=True, timeout=timeout, verify=verify, cert=cert, proxies=proxies
        )
        read_timeout = timeout[1] if isinstance(timeout, tuple) else timeout
        try:
            declared = int(response.headers.get("Content-Length", "-1"))
        except ValueError:
            declared = -1
        if declared > self.max_bytes:
            response.close()
            raise ResponseTooLarge(f"declared body of {declared} bytes exceeds the cap of {self.max_bytes}")
        deadline = time.monotonic() + read_timeout if read_timeout else None
        chunks, total = [], 0
        try:
            for chunk in response.iter_content(self.chunk_size):
                total += len(chunk)
                if total > self.max_bytes:
                    raise ResponseTooLarge(f"body exceeds the cap of {self.max_bytes} bytes")
                if deadline is not None and time.monotonic() > deadline:
                    raise BodyTimeout(f"body not received within {read_timeout:g} s")
                chunks.append(chunk)
        except BaseException:
            response.close()
            raise
        response._content = b"".join(chunks)
        response._content_consumed = True
        return response


def build_session(cache_path: str | Path, settings: SourceSettings | None = None) -> CachedSession:
    """Build the ``CachedSession`` every adapter gets injected.

    SQLite backend in WAL mode with the JSON serializer, or, when ``settings.redis_url`` is set (several
    hosts), Redis under the ``urban_http`` namespace (``cache_path`` is then unused); only 200 answers are
    cached; the De Lijn key is neither part of a cache key nor stored. Expiry is given per request by the
    adapters (per source and kind).

    Examples
    --------
    >>> s = build_session(tmp_path / "http_cache.sqlite")  # doctest: +SKIP
    >>> s.cache.responses.wal  # doctest: +SKIP
    True
    """
    settings = settings or SourceSettings()
    if settings.redis_url:
        backend = redis_cache(settings.redis_url)
    else:
        cache_path = Path(cache_path)
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        backend = SQLiteCache(cache_path, serializer="json", wal=True, busy_timeout=10_000)
    session = CachedSession(
        backend=backend,
        expire_after=300,
        allowable_codes=(200,),
        allowable_methods=("GET", "POST"),  # a POST's JSON body is part of its cache key
        ignored_parameters=tuple(DEFAULT_IGNORED_PARAMS) + SECRET_PARAMS,
        stale_if_error=False,
        match_headers=False,
    )
    adapter = CappedAdapter(settings.max_bytes, max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.headers.update({"User-Agent": USER_AGENT, "Accept": "application/json"})
    return session


def redis_cache(url: str):
    """The requests-cache Redis backend at ``url`` (namespace ``urban_http``, JSON serializer; entries expire
    in Redis with the responses' own expiry)."""
    from redis import Redis
    from requests_cache import RedisCache

    return RedisCache(namespace="urban_http", connection=Redis.from_url(url), serializer="json", ttl=True)


class CircuitBreaker:
    """Per-source breaker: ``failures`` consecutive failed fetches open it for ``cooldown`` seconds.

    After the cool-down one trial fetch is let through (half-open); its success closes the breaker, its
    failure opens it again for another cool-down.

    Examples
    --------
    >>> b = CircuitBreaker(failures=1, cooldown=10, clock=lambda: 0.0)
    >>> b.record_failure(); b.state
    'open'
    """

    def __init__(
        self, failures: int = 5, cooldown: float = 60.0, clock: Callable[[], float] = time.monotonic
    ):
        self.failures = max(1, int(failures))
        self.cooldown = float(cooldown)
        self.clock = clock
        self._lock = threading.Lock()
        self._count = 0
        self._opened_at: float | None = None
        self._trial = False

    @property
    def state(self) -> str:
        with self._lock:
            return self._state()

    def _state(self) -> str:
        if self._opened_at is None:
            return "closed"
        return "half-open" if self.clock() - self._opened_at >= self.cooldown else "open"

    def retry_after(self) -> float:
        """Seconds until the breaker lets a trial through (0 when closed)."""
        with self._lock:
            if self._opened_at is None:
                return 0.0
            return max(0.0, self.cooldown - (self.clock() - self._opened_at))

    def acquire(self) -> bool:
        """May a fetch go out now? In half-open state only one trial at a time is admitted."""
        with self._lock:
            state = self._state()
            if state == "closed":
                return True
            if state == "half-open" and not self._trial:
                self._trial = True
                return True
            return False

    def record_success(self) -> None:
        with self._lock:
            self._count, self._opened_at, self._trial = 0, None, False

    def record_failure(self) -> None:
        with self._lock:
            self._count += 1
            if self._trial or self._count >= self.failures:
                self._opened_at = self.clock()
            self._trial = False


@dataclass(frozen=True)
class Fetched:
    """A validated JSON payload with where and when it was retrieved."""

    payload: Any
    url: str
    retrieved_at: datetime  # aware UTC: the real retrieval time (the cache entry's time when from cache)
    from_cache: bool


class Upstream:
    """Fetches JSON from the upstream sources through the injected session under one policy.

    Parameters
    ----------
    session : requests_cache.CachedSession
        From ``build_session``; injected so tests and the refresher control the cache.
    settings : SourceSettings
        Timeouts (connect/read), total time budget per fetch, attempts, backoff, breaker thresholds.
    clock, sleep : callables
        Monotonic clock and sleep (parameters so a caller can drive time).

    Examples
    --------
    >>> up = Upstream(build_session(path), settings)                       # doctest: +SKIP
    >>> up.get_json("ircel", f"{settings.ircel_url}/stations", params={"phenomenon": 8},
    ...             expire_after=86400, check=expect_list).payload[0]["properties"]["label"]  # doctest: +SKIP
    '40AL01 - Linkeroever'
    """

    def __init__(
        self,
        session: CachedSession,
        settings: SourceSettings | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.session = session
        self.settings = settings or SourceSettings()
        self.clock = clock
        self.sleep = sleep
        self._breakers: dict[str, CircuitBreaker] = {}
        self._lock = threading.Lock()

    def breaker(self, source: str) -> CircuitBreaker:
        """The breaker of one source (created on first use)."""
        with self._lock:
            if source not in self._breakers:
                self._breakers[source] = CircuitBreaker(
                    self.settings.breaker_failures, self.settings.breaker_cooldown, self.clock
                )
            return self._breakers[source]

    #: called as ``on_response(source, endpoint, url, status, body_bytes, retrieved_at)`` for every answer accepted (a
    #: validated 200, or a 404 with ``missing_ok``): the hook ``app.sources.recording`` records with
    on_response: Callable[..., None] | None = None

    @overload
    def get_json(
        self,
        source: str,
        url: str,
        *,
        params: dict | None = ...,
        headers: dict | None = ...,
        expire_after: float | None = ...,
        check: Callable[[Any], None] | None = ...,
        missing_ok: Literal[False] = ...,
        endpoint: str = ...,
        json_body: dict | None = ...,
    ) -> Fetched: ...

    @overload
    def get_json(
        self,
        source: str,
        url: str,
        *,
        params: dict | None = ...,
        headers: dict | None = ...,
        expire_after: float | None = ...,
        check: Callable[[Any], None] | None = ...,
        missing_ok: bool,
        endpoint: str = ...,
        json_body: dict | None = ...,
    ) -> Fetched | None: ...

    def get_json(
        self,
        source: str,
        url: str,
        *,
        params: dict | None = None,
        headers: dict | None = None,
        expire_after: float | None = None,
        check: Callable[[Any], None] | None = None,
        missing_ok: bool = False,
        endpoint: str = "",
        json_body: dict | None = None,
    ) -> Fetched | None:
        """GET ``url`` (POST ``json_body`` when given) and return its validated JSON, or raise
        ``UpstreamError`` within the time budget.

        Retries refused/timed-out connections, 429/5xx answers and truncated or malformed bodies with
        exponential backoff (``backoff * 2**n``), honouring ``Retry-After`` when it fits in the remaining
        budget; a ``Retry-After`` beyond the budget ends the fetch at once. Other 4xx answers and bodies over
        the size cap are not retried. ``check(payload)`` validates the shape (raise ``PayloadError``,
        ``KeyError``, ``TypeError`` or ``ValueError``). With ``missing_ok`` a 404 returns None. ``endpoint`` is
        the upstream's own path template of the request (for recordings).
        """
        label = SOURCES[source].label if source in SOURCES else source
        breaker = self.breaker(source)
        if not breaker.acquire():
            opens_in = breaker.retry_after()
            raise UpstreamError(
                source,
                f"{label}: circuit breaker open after repeated failures; next attempt in {opens_in:.0f} s",
                retry_after=opens_in,
            )
        s = self.settings
        deadline = self.clock() + s.budget
        reason = "no attempt fitted in the time budget"
        for attempt in range(s.attempts):
            remaining = deadline - self.clock()
            if remaining <= 0:
                break
            timeout = (min(s.connect_timeout, remaining), min(s.read_timeout, remaining))
            wait: float | None = None
            try:
                response = self.session.request(
                    "GET" if json_body is None else "POST",
                    url,
                    params=params,
                    json=json_body,
                    headers=headers,
                    timeout=timeout,
                    expire_after=expire_after,
                )
            except ResponseTooLarge as exc:
                breaker.record_failure()
                raise UpstreamError(source, f"{label}: answer too large ({exc})") from None
            except requests.Timeout:
                reason = f"no answer within the timeout ({timeout[0]:.3g} s connect, {timeout[1]:.3g} s read)"
            except requests.ConnectionError as exc:
                reason = f"connection failed ({_short(exc)})"
            except requests.RequestException as exc:
                reason = f"request failed ({_short(exc)})"
            else:
                status = response.status_code
                if status == 200:
                    try:
                        payload = json.loads(response.content)
                        if check is not None:
                            check(payload)
                    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
                        self._forget(response)
                        reason = f"malformed or truncated answer ({_short(exc)})"
                    else:
                        breaker.record_success()
                        fetched = Fetched(
                            payload,
                            response.url,
                            _retrieved_at(response),
                            bool(getattr(response, "from_cache", False)),
                        )
                        if self.on_response is not None:
                            self.on_response(
                                source, endpoint, response.url, 200, response.content, fetched.retrieved_at
                            )
                        return fetched
                elif status in RETRY_STATUSES:
                    reason = f"HTTP {status}"
                    wait = _retry_after(response.headers.get("Retry-After"))
                    if wait is not None and wait > deadline - self.clock():
                        reason += f" with Retry-After {wait:g} s beyond the time budget"
                        break
                elif status == 404 and missing_ok:
                    breaker.record_success()
                    if self.on_response is not None:
                        self.on_response(
                            source, endpoint, response.url, 404, response.content, datetime.now(timezone.utc)
                        )
                    return None
                else:
                    breaker.record_failure()
                    raise UpstreamError(source, f"{label}: HTTP {status} from {_origin(url)}")
            if attempt + 1 < s.attempts:
                pause = wait if wait is not None else s.backoff * (2**attempt)
                if pause >= deadline - self.clock():
                    break
                self.sleep(pause)
        breaker.record_failure()
        raise UpstreamError(source, f"{label}: {reason} ({_origin(url)})")

    def post_json(
        self,
        source: str,
        url: str,
        *,
        body: dict,
        headers: dict | None = None,
        expire_after: float | None = None,
        check: Callable[[Any], None] | None = None,
        endpoint: str = "",
    ) -> Fetched:
        """POST the JSON ``body`` to ``url``, under the same policy as :meth:`get_json` (the body is part of
        the cache key)."""
        got = self.get_json(
            source,
            url,
            headers=headers,
            expire_after=expire_after,
            check=check,
            endpoint=endpoint,
            json_body=body,
        )
        assert got is not None  # missing_ok is False
        return got

    def _forget(self, response) -> None:
        """Drop a bad answer from the cache so the next call goes to the network."""
        try:
            self.session.cache.delete(requests=[response.request])
        except Exception:  # pragma: no cover - cache already gone
            pass


def _retrieved_at(response) -> datetime:
    created = getattr(response, "created_at", None) if getattr(response, "from_cache", False) else None
    if created is None:
        return datetime.now(timezone.utc)
    return created if created.tzinfo else created.replace(tzinfo=timezone.utc)


def _retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or HTTP date); None when absent or unusable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."


def same_origin(url: str, base: str) -> bool:
    """True when ``url`` is on the scheme, host and port of ``base`` and under its path (SSRF guard)."""
    u, b = urlsplit(url), urlsplit(base)
    return (u.scheme, u.netloc) == (b.scheme, b.netloc) and u.path.startswith(b.path.rstrip("/") + "/")
