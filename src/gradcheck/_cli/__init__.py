"""What ``gradcheck``'s command line (``cli.py``) needs besides its commands' wiring: loading
the user's ``MODULE:NAME`` (``common``), the help layout with defaults and exit codes
(``help``), stdout that survives a closed pipe (``pipe``), and the ``dispute`` command's
file handling (``dispute``). Nothing here is imported by the library; only ``cli.py`` uses it.
"""
from __future__ import annotations

from .common import UserCodeError as UserCodeError
from .common import Watched as Watched
from .common import load as load
from .common import one_line as one_line
from .common import parse_axes as parse_axes
from .common import parse_shape as parse_shape
from .help import CommandParser as CommandParser
from .help import HelpFormatter as HelpFormatter
from .pipe import quiet_broken_pipe as quiet_broken_pipe
