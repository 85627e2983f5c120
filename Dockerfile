# quarry in a container: the packed tarball installed as a user installs it (npm install -g, no install flags).
#   docker build -t quarry .
#   docker run --rm -v "$PWD:/repo" -v quarry-cache:/root/.cache/quarry quarry index
#   docker run --rm -v "$PWD:/repo" -v quarry-cache:/root/.cache/quarry quarry search "where are retries handled"
#   docker run --rm -p 7411:7411 -v "$PWD:/repo" -v quarry-cache:/root/.cache/quarry quarry serve --host 0.0.0.0 --port 7411
#   docker run --rm -i -v "$PWD:/repo" -v quarry-cache:/root/.cache/quarry quarry mcp        # stdio, for an agent
# Off loopback `serve` requires a token: it prints the URL with one (or pass --token / --tokens).
# Weights: mount a folder holding model.onnx and run `quarry model install /models/model.onnx` once (the cache
# volume keeps it), or let the first `quarry index` download them when the container can reach the model hub.

FROM node:20-bookworm-slim AS build
WORKDIR /src
# better-sqlite3 compiles from source where no prebuilt binary can be fetched
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY models ./models
COPY scripts/preinstall.cjs ./scripts/preinstall.cjs
COPY src ./src
RUN npm run build && npm pack --silent && mv quarry-*.tgz /quarry.tgz

FROM node:20-bookworm-slim
COPY --from=build /quarry.tgz /tmp/quarry.tgz
# the same install scripts/test-install.sh runs in CI; the compilers are removed once better-sqlite3 is built
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ git \
  && npm_config_nodedir=/usr/local npm install -g --no-audit --no-fund /tmp/quarry.tgz \
  && rm /tmp/quarry.tgz \
  && apt-get purge -y make g++ && apt-get autoremove -y && rm -rf /var/lib/apt/lists/* /root/.npm
WORKDIR /repo
ENTRYPOINT ["quarry"]
CMD ["--help"]
