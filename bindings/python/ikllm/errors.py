"""Exceptions carrying the library's status code and message."""
from . import _abi


class IkllmError(Exception):
    """A failed ikllm call: .status (IKLLM_* code), .status_name and .message (the library's text)."""

    def __init__(self, status: int, message: str, call: str = ""):
        self.status = status
        self.status_name = _abi.STATUS_NAMES.get(status, "IKLLM_STATUS_%d" % status)
        self.message = message
        self.call = call
        where = "%s: " % call if call else ""
        super().__init__("%s%s [%s]" % (where, message, self.status_name))


class CancelledError(IkllmError):
    """A progress callback or cancel flag stopped the call (IKLLM_CANCELLED)."""


class AbiMismatchError(ImportError):
    """The shared library has another ABI major than this binding was generated for."""
