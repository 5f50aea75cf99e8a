"""Engine errors: one hierarchy, mapped to HTTP errors only at the app edge."""


class GeoError(Exception):
    """Base class of every error the engine raises."""


class InvalidCoordinates(GeoError, ValueError):
    """A latitude/longitude is NaN, infinite, not a number or out of range."""


class OutsideServiceArea(GeoError):
    """A point lies outside Flanders and Brussels."""


class SnapshotError(GeoError):
    """A snapshot directory is missing, partial or corrupt; the message names the file and the fix."""
