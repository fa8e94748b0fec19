"""A PNG writer (8-bit RGB, no interlace) with zlib and struct only: pictures need no plotting
library."""
from __future__ import annotations

import base64
import struct
import zlib

import numpy as np

_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_bytes(rgb: np.ndarray) -> bytes:
    """Encode an ``(height, width, 3)`` uint8 array as a PNG file's bytes."""
    rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
    if rgb.ndim != 3 or rgb.shape[2] != 3 or 0 in rgb.shape[:2]:
        raise ValueError(f"expected a non-empty (height, width, 3) array, got shape {rgb.shape}")
    height, width = rgb.shape[:2]
    # Filter type 0 (none) before each scanline; flat colour fields compress to almost nothing.
    raw = np.concatenate([np.zeros((height, 1), np.uint8), rgb.reshape(height, 3 * width)], axis=1)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (_SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw.tobytes(), 6))
            + _chunk(b"IEND", b""))


def png_data_uri(rgb: np.ndarray) -> str:
    """``data:image/png;base64,...`` for an ``(height, width, 3)`` uint8 array."""
    return "data:image/png;base64," + base64.b64encode(png_bytes(rgb)).decode("ascii")
