# Urban Conditions Service: runtime image (API, portal and docs; no client, tests or dev tools installed).
# The data snapshot is mounted at /data/snapshot (build it with `make snapshot` or the builder below);
# the account database lives in the instance volume /var/lib/urban.
# Swagger UI for /api/v1/docs, from the npm registry at the version locked in app/docs_ui (no CDN at run time).
FROM node:20-slim AS docs-ui
WORKDIR /ui
COPY app/docs_ui/package.json app/docs_ui/package-lock.json ./
RUN SCARF_ANALYTICS=false npm ci --ignore-scripts --no-audit --no-fund

# The dashboard's Leaflet comes from npm at build time (package-lock.json); nothing is loaded from a CDN.
FROM node:20-slim AS assets
WORKDIR /assets
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    URBAN_ENV=production \
    URBAN_DATA_DIR=/data/snapshot \
    URBAN_INSTANCE_PATH=/var/lib/urban \
    HOST=0.0.0.0 \
    PORT=8000 \
    WEB_CONCURRENCY=2

# WeasyPrint (PDF reports) needs pango and a font.
RUN apt-get update && apt-get install -y --no-install-recommends libpango-1.0-0 libpangoft2-1.0-0 \
    libharfbuzz-subset0 fonts-dejavu-core && rm -rf /var/lib/apt/lists/*

RUN useradd --system --create-home --uid 10001 urban \
 && mkdir -p /data /var/lib/urban && chown urban /var/lib/urban

WORKDIR /srv/urban
COPY requirements.txt ./
RUN pip install -r requirements.txt
COPY setup.cfg pyproject.toml README.md wsgi.py urban_score.py gunicorn.conf.py ./
COPY app ./app
COPY --from=assets /assets/node_modules/leaflet/dist/leaflet.js /assets/node_modules/leaflet/dist/leaflet.css \
     ./app/dashboard/static/vendor/leaflet/
COPY --from=assets /assets/node_modules/leaflet/dist/images ./app/dashboard/static/vendor/leaflet/images
COPY geo ./geo
COPY --from=docs-ui /ui/node_modules ./app/docs_ui/node_modules
RUN pip install --no-deps .

USER urban
VOLUME ["/data", "/var/lib/urban"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=3s --start-period=20s \
  CMD python -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('PORT', '8000'), timeout=2)"
# URBAN_SECRET_KEY and URBAN_PUBLIC_URL must be provided at run time (the app refuses to start in production
# without them), e.g.
#   docker run -e URBAN_SECRET_KEY=... -e URBAN_PUBLIC_URL=https://api.example.be -v $PWD/data/snapshot:/data/snapshot:ro -v urban:/var/lib/urban -p 8000:8000 urban
# A missing or corrupt snapshot stops the container at start with a message naming the file.
CMD ["gunicorn", "--config", "gunicorn.conf.py", "wsgi:app"]
