"""Text out of pictures of text: image-only PDF pages and uploaded images, with Tesseract.

Tesseract is a program (Debian's `tesseract-ocr`, models included), run once per image with a
time limit of its own; nothing is downloaded. It runs one thread per image: on a small
machine the worker's OCR should not take every core from the API beside it.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

from PIL import Image, ImageOps, ImageSequence, UnidentifiedImageError
from pypdf import PageObject

from docchat.extraction.reader import ExtractedDocument, ExtractionError, PageText, unreadable

logger = logging.getLogger(__name__)

# How sources mark text that was read by OCR (it can hold misread words).
OCR_PAGE_LOCATION = "Scanned page, text by OCR"
OCR_IMAGE_LOCATION = "Image, text by OCR"
# Pictures smaller than this on either side are icons or rules, not text worth reading.
MIN_IMAGE_SIDE = 100


@dataclass(frozen=True)
class OcrOptions:
    languages: str = "eng"  # Tesseract's names, joined by "+": "eng+deu"
    page_seconds: float = 60.0
    max_pages: int = 100
    max_megapixels: int = 50
    command: str = "tesseract"


def tesseract_problem(options: OcrOptions) -> tuple[str, str]:
    """Why OCR cannot run with `options` and what to install, or ("", "") when it can."""
    command = shutil.which(options.command)
    if command is None:
        return (
            f"{options.command} was not found",
            "install it (Debian/Ubuntu: apt-get install tesseract-ocr)",
        )
    try:
        listed = subprocess.run(  # noqa: S603 - the configured OCR program
            [command, "--list-langs"], capture_output=True, text=True, timeout=30, check=True
        ).stdout.split()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{command} --list-langs failed ({exc})", "reinstall tesseract-ocr"
    missing = [name for name in options.languages.split("+") if name not in listed]
    if missing:
        packages = " ".join(f"tesseract-ocr-{name}" for name in missing)
        return (
            f"Tesseract has no model for {', '.join(missing)}",
            f"install it (Debian: apt-get install {packages}) or change OCR_LANGUAGES",
        )
    return "", ""


def find_tesseract(options: OcrOptions) -> OcrOptions | None:
    """`options` when Tesseract is installed with every language asked for; None (and a
    warning saying what to install) otherwise."""
    problem, advice = tesseract_problem(options)
    if problem:
        logger.warning(
            "OCR is off: %s; %s. Scanned PDFs and images will be refused", problem, advice
        )
        return None
    command = shutil.which(options.command)
    assert command is not None
    return OcrOptions(
        languages=options.languages,
        page_seconds=options.page_seconds,
        max_pages=options.max_pages,
        max_megapixels=options.max_megapixels,
        command=command,
    )


def recognize(image: Image.Image, options: OcrOptions) -> str:
    """The text Tesseract reads in `image`; "" when it finds none or runs out of time."""
    buffer = BytesIO()
    ImageOps.grayscale(image).save(buffer, format="PNG")
    try:
        done = subprocess.run(  # noqa: S603 - the configured OCR program on our own PNG
            [options.command, "stdin", "stdout", "-l", options.languages, "--psm", "3"],
            input=buffer.getvalue(),
            capture_output=True,
            timeout=options.page_seconds,
            env={**os.environ, "OMP_THREAD_LIMIT": "1"},
            check=False,
        )
    except subprocess.TimeoutExpired:
        logger.warning("OCR of an image took more than %g s; skipped", options.page_seconds)
        return ""
    if done.returncode != 0:
        logger.warning("OCR failed: %s", done.stderr.decode("utf-8", "replace")[-300:])
        return ""
    return tidy(done.stdout.decode("utf-8", "replace"))


def tidy(text: str) -> str:
    """Tesseract's output without its form feed and runs of blank lines."""
    lines = [line.rstrip() for line in text.replace("\f", "\n").splitlines()]
    paragraphs: list[str] = []
    current: list[str] = []
    for line in [*lines, ""]:
        if line.strip():
            current.append(line)
        elif current:
            paragraphs.append("\n".join(current))
            current = []
    return "\n\n".join(paragraphs)


def _check_size(image: Image.Image, options: OcrOptions) -> None:
    megapixels = image.width * image.height / 1_000_000
    if megapixels > options.max_megapixels:
        raise ExtractionError(
            f"The image is {image.width}x{image.height} pixels ({megapixels:.0f} megapixels); "
            f"OCR reads images up to {options.max_megapixels} megapixels"
        )


def _too_big(options: OcrOptions) -> ExtractionError:
    return ExtractionError(
        f"The image is far larger than the {options.max_megapixels} megapixels OCR reads"
    )


def _open_image(path: Path, options: OcrOptions) -> Image.Image:
    """The image, opened (not decoded); its size is checked frame by frame by `_frames`."""
    try:
        with warnings.catch_warnings():
            # Pillow warns of huge images; `_check_size` refuses them with a clearer reason.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            return Image.open(path)
    except Image.DecompressionBombError as exc:
        raise _too_big(options) from exc
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise unreadable("image", exc) from exc


def _frames(image: Image.Image, options: OcrOptions) -> Iterator[Image.Image]:
    """Each page of an image (a TIFF can hold many), each checked for size before decoding."""
    for number, frame in enumerate(ImageSequence.Iterator(image), start=1):
        if number > options.max_pages:
            raise ExtractionError(
                f"The image has more than {options.max_pages} pages; OCR reads at most "
                f"{options.max_pages} per document"
            )
        _check_size(frame, options)
        try:
            frame.load()
        except (OSError, ValueError) as exc:
            raise unreadable("image", exc) from exc
        # Phone photos are stored sideways with an EXIF note of how to turn them upright.
        yield ImageOps.exif_transpose(frame.copy())


def extract_image(path: Path, options: OcrOptions | None) -> ExtractedDocument:
    """A PNG, JPEG or TIFF read by OCR: one page per frame, each marked as OCR text."""
    if options is None:
        raise ExtractionError(
            "Images are read with OCR, which is not installed on this server "
            "(an administrator can install tesseract-ocr)"
        )
    with _open_image(path, options) as image:
        pages = [
            PageText(page=number, text=recognize(frame, options))
            for number, frame in enumerate(_frames(image, options), start=1)
        ]
    single = len(pages) == 1
    pages = [
        PageText(
            page=None if single else page.page,
            text=page.text,
            location=OCR_IMAGE_LOCATION if single else OCR_PAGE_LOCATION,
        )
        for page in pages
    ]
    if not any(page.text.strip() for page in pages):
        raise ExtractionError("No text was found in the image, even by OCR")
    return ExtractedDocument(pages=pages, page_count=len(pages), ocr_pages=len(pages))


def pdf_page_text(page: PageObject, options: OcrOptions) -> str:
    """The text of an image-only PDF page: each picture on it big enough to hold text, read by
    OCR in the order the page draws them."""
    texts: list[str] = []
    for picture in page.images:
        try:
            image = picture.image
        except Image.DecompressionBombError as exc:
            raise _too_big(options) from exc
        if image is None or min(image.size) < MIN_IMAGE_SIDE:
            continue
        _check_size(image, options)
        text = recognize(image, options)
        if text:
            texts.append(text)
    return "\n\n".join(texts)
