# Urban Conditions Service: runtime image (API only; tests and dev tools are not installed).
# The data snapshot is mounted at /data/snapshot (build it with `make snapshot` or the builder below);
# the account database lives in the instance volume /var/lib/urban.
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

RUN useradd --system --create-home --uid 10001 urban \
 && mkdir -p /data /var/lib/urban && chown urban /var/lib/urban

WORKDIR /srv/urban
COPY requirements.txt ./
RUN pip install -r requirements.txt
COPY setup.cfg pyproject.toml README.md wsgi.py gunicorn.conf.py ./
COPY app ./app
COPY geo ./geo
COPY urban_client ./urban_client
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
