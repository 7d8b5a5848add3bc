# thinkflow/redis: Debian's redis-server on the same debootstrap base as the
# other images (no registry image). Its configuration is the command line in
# docker-compose.yml.
ARG BASE=thinkflow/debian-base:bookworm
FROM ${BASE}
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server >/dev/null \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /data && chown redis:redis /data
WORKDIR /data
USER redis
ARG INPUTS_HASH=unknown
LABEL thinkflow.image=redis thinkflow.inputs-hash=${INPUTS_HASH}
EXPOSE 6379
CMD ["redis-server", "--appendonly", "yes"]
