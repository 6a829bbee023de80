"""Draw engine, record, MQTT, web and the `ballreader` command; the one place where parts are wired."""
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ballreader")
except PackageNotFoundError:  # running from a checkout that is not installed
    __version__ = "0.0.0+checkout"
