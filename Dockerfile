# mnemobot: a Telegram assistant that remembers.
#   docker build -t mnemobot .
#   docker run -d --env-file .env -v mnemobot-data:/data mnemobot
# Everything the bot keeps (sessions, memory, runtime config) is in the /data volume.
# With the voice extra (voice notes transcribed in the bot by faster-whisper, for model
# servers without speech to text: llama.cpp, Ollama), about 300 MB more:
#   docker build --build-arg EXTRAS=voice -t mnemobot:voice .
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# A dedicated user without a login shell; the numeric id lets orchestrators check
# "not root" without reading /etc/passwd.
RUN groupadd --system --gid 10001 mnemobot \
    && useradd --system --uid 10001 --gid mnemobot --home-dir /data --no-create-home \
       --shell /usr/sbin/nologin mnemobot

# Optional extras of the package, comma-separated: "" (none) or "voice".
ARG EXTRAS=""
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY mnemobot ./mnemobot
RUN pip install ".${EXTRAS:+[$EXTRAS]}" && rm -rf /src

RUN mkdir /data && chown mnemobot:mnemobot /data
ENV BOT_WORKSPACE=/data \
    HOME=/data
VOLUME ["/data"]
WORKDIR /data

USER 10001:10001

# Only used with `mnemobot run --webhook` (BOT_WEBHOOK_LISTEN, default 0.0.0.0:8443).
EXPOSE 8443

# `docker run IMAGE` serves Telegram; `docker run IMAGE doctor` (or chat, memory ...) runs
# another command. SIGTERM stops taking updates and lets running replies finish (10 s).
ENTRYPOINT ["mnemobot"]
CMD ["run"]
STOPSIGNAL SIGTERM
