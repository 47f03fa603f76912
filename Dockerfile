# docchat API + worker image. The web app is built in the first stage.
FROM node:20-bookworm-slim AS frontend
WORKDIR /src/frontend
COPY frontend/ ./
RUN if [ -f package.json ]; then npm ci && npm run build; else mkdir -p dist; fi

FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 DATA_DIR=/data
WORKDIR /app
# Tesseract reads scanned PDFs and images (OCR); add tesseract-ocr-<lang> for OCR_LANGUAGES.
# Apertium and FreeDict translate questions, into English and into the documents' languages,
# when no model does.
RUN apt-get update && apt-get install -y --no-install-recommends tesseract-ocr \
    apertium apertium-eng-spa apertium-fr-es \
    dict-freedict-deu-eng dict-freedict-fra-eng dict-freedict-spa-eng \
    dict-freedict-eng-deu dict-freedict-eng-fra dict-freedict-eng-spa \
    && rm -rf /var/lib/apt/lists/*
RUN pip install "torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu
COPY pyproject.toml README.md alembic.ini ./
COPY backend ./backend
COPY migrations ./migrations
RUN pip install .
COPY --from=frontend /src/frontend/dist ./frontend/dist
EXPOSE 8000
CMD ["sh", "-c", "alembic upgrade head && docchat serve --host 0.0.0.0 --port 8000"]
