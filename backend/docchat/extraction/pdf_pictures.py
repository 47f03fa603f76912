"""Text inside the pictures drawn on a PDF's pages of text, read by OCR.

A PDF with a text layer can still keep its key figures in a picture: a chart pasted as an
image, a scanned table in a report. Each picture a page draws itself (not inside a form) is
read by the OCR that reads scans (`ocr.recognize`), under the bounds of a document's pictures
(`pictures.PictureBudget`: `OcrOptions.max_pages` of them, 120 s), each within
`max_megapixels` (read from the picture's dictionary before it is decoded) and its time. A
picture under `MIN_IMAGE_SIDE` pixels a side (an icon, a rule) or drawn over most of the page
(the scan under a searchable PDF's text layer, whose text the page already has) is not read,
and one drawn on many pages (a logo) is read once. Its text becomes a part of the page located
"image 2, text by OCR".
"""

from __future__ import annotations

import logging
import math
from typing import Any

from PIL import Image
from pypdf import PageObject
from pypdf.generic import DictionaryObject, IndirectObject, NameObject

from docchat.extraction.ocr import MIN_IMAGE_SIDE, OcrOptions, recognize
from docchat.extraction.pictures import OCR_NOTE, PictureBudget
from docchat.extraction.reader import PageText

logger = logging.getLogger(__name__)

# A picture drawn over more than this share of its page is the page (a scan under a text
# layer): its text is the page's own already.
MAX_PAGE_SHARE = 0.6


def _page_images(page: PageObject) -> dict[str, Any]:
    """The image XObjects the page's resources name: "/I1" -> its (indirect) object."""
    resources = page.get(NameObject("/Resources"))
    if resources is None:
        return {}
    objects = resources.get_object().get(NameObject("/XObject"))
    if objects is None:
        return {}
    found = {}
    for name, reference in objects.get_object().items():
        value = reference.get_object()
        if isinstance(value, DictionaryObject) and value.get("/Subtype") == "/Image":
            found[str(name)] = reference
    return found


def _drawn_sizes(page: PageObject) -> dict[str, float]:
    """The share of the page each picture is first drawn over, by its name ("/I1")."""
    box = page.mediabox
    area = max(float(box.width) * float(box.height), 1.0)
    shares: dict[str, float] = {}

    def visit(operator: bytes, arguments: list[Any], cm: list[float], *_: object) -> None:
        if operator == b"Do" and arguments:
            name = str(arguments[0])
            width, height = math.hypot(cm[0], cm[1]), math.hypot(cm[2], cm[3])
            shares.setdefault(name, width * height / area)

    page.extract_text(visitor_operand_before=visit)
    return shares


def _pixels(image: Any) -> tuple[int, int]:
    value = image.get_object()
    return int(value.get("/Width", 0)), int(value.get("/Height", 0))


class PdfPictures:
    """The pictures of one PDF's pages of text, read by OCR, each picture once."""

    def __init__(self, options: OcrOptions) -> None:
        self.options = options
        self._budget = PictureBudget(options)
        self._seen: set[tuple[int, int]] = set()

    def page_parts(self, page: PageObject, number: int) -> list[PageText]:
        """The text of the pictures page `number` draws, a part per picture with text."""
        images = _page_images(page)
        if not images:
            return []
        parts: list[PageText] = []
        for index, (name, share) in enumerate(_drawn_sizes(page).items(), start=1):
            if name not in images or share > MAX_PAGE_SHARE or not self._first_time(images[name]):
                continue
            width, height = _pixels(images[name])
            if min(width, height) < MIN_IMAGE_SIDE:
                continue
            if width * height / 1_000_000 > self.options.max_megapixels:
                logger.warning(
                    "a picture on page %d is %dx%d; not read by OCR", number, width, height
                )
                continue
            if not self._budget.take("a PDF"):
                return parts
            text = self._text(page, name, number)
            if text.strip():
                location = f"image {index}, {OCR_NOTE}"
                parts.append(PageText(page=number, text=text, location=location))
        return parts

    def _first_time(self, reference: Any) -> bool:
        if not isinstance(reference, IndirectObject):
            return True
        key = (reference.idnum, reference.generation)
        if key in self._seen:
            return False
        self._seen.add(key)
        return True

    def _text(self, page: PageObject, name: str, number: int) -> str:
        try:
            image = page.images[name].image
        except Image.DecompressionBombError:
            logger.warning("a picture on page %d is far too large; not read by OCR", number)
            return ""
        except Exception as exc:  # a picture pypdf cannot decode: nothing to read
            logger.info("a picture on page %d could not be decoded: %s", number, exc)
            return ""
        if image is None:
            return ""
        return recognize(image, self.options)
