"""gradcheck: check every entry of a claimed gradient against central differences."""
from ._version import __version__ as __version__
