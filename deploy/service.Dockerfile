# thinkflow/service: the API and the worker (one image, `serve --role …`).
# Built by scripts/compose.sh from the same debootstrap base as the sandbox
# image (sandbox-image/build.sh), with no registry: Node is the build
# machine's own binary and the app its checkout with production
# dependencies, both staged by the script into the build context.
ARG BASE=thinkflow/debian-base:bookworm
FROM ${BASE}
# Workers attach each workspace image to a loop device and make its ext4
# filesystem (services/sandbox/workspace-fs.ts): losetup (mount) and mkfs.ext4 (e2fsprogs).
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mount e2fsprogs ca-certificates >/dev/null \
 && rm -rf /var/lib/apt/lists/*
COPY node /usr/local/bin/node
COPY app/ /app/
WORKDIR /app
ENV NODE_ENV=production THINKFLOW_POLICY_DIR=/app/policies
ARG INPUTS_HASH=unknown
LABEL thinkflow.image=service thinkflow.inputs-hash=${INPUTS_HASH}
ENTRYPOINT ["node", "/app/bin/thinkflow.mjs"]
CMD ["serve"]
