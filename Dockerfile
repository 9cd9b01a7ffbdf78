# Builds the `checkin` executable alone (never checkin-bench, the load generator and the
# benchmarks); docker-compose.yml runs it as each service.
FROM swift:6.2-bookworm AS build
WORKDIR /src
COPY scripts/setup.sh scripts/setup.sh
# librdkafka >= 2.6 (static) and the build dependencies, exactly as on a developer machine.
RUN scripts/setup.sh
COPY Package.swift ./
COPY Plugins Plugins
COPY Sources Sources
COPY Tests Tests
RUN . .local/env.sh && swift build -c release --product checkin --static-swift-stdlib \
    && cp "$(swift build -c release --show-bin-path)/checkin" /checkin

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates libssl3 libsasl2-2 libcurl4 zlib1g liblz4-1 libzstd1 tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 checkin && useradd --system --uid 10001 --gid checkin checkin
COPY --from=build /checkin /usr/local/bin/checkin
# By number, so that Kubernetes can verify runAsNonRoot (deploy/kubernetes runs it as 10001).
USER 10001:10001
ENTRYPOINT ["/usr/local/bin/checkin"]
