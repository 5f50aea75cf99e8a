"""Client of the Urban Conditions REST API: the ``urban`` command, ``urban mcp`` (MCP tools for agents) and
the Python :class:`Client` with typed errors."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("urban-conditions-client")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"

from urban_client.api import (
    ApiError,
    AuthenticationError,
    BadRequest,
    ClientError,  # noqa: E402
    NetworkError,
    NotAcceptable,
    NotFound,
    OutsideServiceArea,
    PlanRequired,
    QuotaExceeded,
    RateLimit,
    RateLimited,
    ServerError,
    UpstreamError,
)
from urban_client.client import Client  # noqa: E402

__all__ = [
    "Client",
    "ClientError",
    "ApiError",
    "NetworkError",
    "BadRequest",
    "AuthenticationError",
    "PlanRequired",
    "NotFound",
    "NotAcceptable",
    "OutsideServiceArea",
    "RateLimited",
    "QuotaExceeded",
    "ServerError",
    "UpstreamError",
    "RateLimit",
    "__version__",
]
