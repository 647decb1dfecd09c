"""A large image made small enough to show a model, the original left by reference.

A model sees an image at a few hundred pixels a side whatever its size, so a
plot saved at print resolution only costs context. Pillow (imported when an
image is too large, never at start-up) shrinks it by halves until it fits;
without Pillow, or when it would shrink below what can still be read, the
result carries a link to the original alone, as it always did.
"""

from __future__ import annotations

import base64
import binascii
import io
from dataclasses import dataclass

#: The longest side a shrunk image starts at.
FIRST_SIDE = 1024
#: Below this longest side an image is not shrunk further: it would not be worth reading.
SMALLEST_SIDE = 256


@dataclass(frozen=True)
class Downscaled:
    data: str  # base64
    mime: str
    width: int
    height: int
    original_width: int
    original_height: int


def downscaled(encoded: str, mime: str, max_base64_chars: int) -> Downscaled | None:
    """`encoded` (base64 PNG or JPEG) shrunk below `max_base64_chars`, or None when it cannot be."""
    try:
        from PIL import Image
    except ImportError:
        return None
    try:
        raw = base64.b64decode(encoded, validate=False)
        with Image.open(io.BytesIO(raw)) as opened:
            opened.load()
            image = opened.copy()
    except (OSError, ValueError, binascii.Error, Image.DecompressionBombError):
        return None
    width, height = image.size
    side = min(FIRST_SIDE, max(width, height))
    fmt = "JPEG" if mime == "image/jpeg" else "PNG"
    if fmt == "JPEG" and image.mode not in ("RGB", "L"):
        image = image.convert("RGB")
    while side >= SMALLEST_SIDE and side < max(width, height):
        scale = side / max(width, height)
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        buffer = io.BytesIO()
        image.resize(size, Image.Resampling.LANCZOS).save(buffer, fmt, optimize=True)
        data = base64.b64encode(buffer.getvalue()).decode("ascii")
        if len(data) <= max_base64_chars:
            return Downscaled(data, mime, size[0], size[1], width, height)
        side //= 2
    return None
