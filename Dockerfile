# Mashov application image: the same image runs web (gunicorn), worker and beat
# (see docker-compose.yml). Static files are collected at build time and served by whitenoise.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_SETTINGS_MODULE=config.settings.production \
    WEB_CONCURRENCY=5

WORKDIR /app

# Dependencies before the code, so that editing code does not re-run pip.
# Every pinned package ships a manylinux wheel (psycopg2-binary included): no compiler needed.
# The Persian extra goes in with --no-deps (requirements-persian.txt says why).
COPY requirements.txt requirements-persian.txt ./
RUN pip install -r requirements.txt \
    && pip install --no-deps -r requirements-persian.txt

# hspell, Hebrew's morphological analyser, run as a separate program by the summary kind's
# profile (lemma, anaphor and construct-state figures); Hazm above is Persian's tokenizer
# and stoplist. Both are imported or run on first use only, so they cost no memory at rest.
RUN apt-get update \
    && apt-get install -y --no-install-recommends hspell \
    && rm -rf /var/lib/apt/lists/*

COPY . .

# Production settings refuse to load without a 50+ character SECRET_KEY. This one exists
# only for this RUN step (it is not an ENV, so it is not in the image's environment); the
# real key comes from the environment at run time. The manifest storage needs this step.
RUN SECRET_KEY="build-time-only-key-for-collectstatic-never-used-to-serve-requests" \
    python manage.py collectstatic --noinput

# The code stays owned by root and read-only to the process that serves it. The release
# files are the one thing the application writes to disk: their folder belongs to the app
# user, and docker-compose.yml mounts a volume shared by the webs and the workers on it (a
# new named volume takes the folder's owner).
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin mashov \
    && mkdir -p /var/lib/mashov/releases \
    && chown -R mashov:mashov /var/lib/mashov
ENV MASHOV_RELEASE_ROOT=/var/lib/mashov/releases
USER mashov

EXPOSE 8000
# config/gunicorn.py: WEB_CONCURRENCY workers forked from a master that loaded the app, so
# they share its code's memory. It binds 0.0.0.0:8000, the container's own interface;
# docker-compose.yml publishes the port on the host's 127.0.0.1 only.
CMD ["gunicorn", "-c", "config/gunicorn.py"]
