# syntax=docker/dockerfile:1
# Tumbler as a ~3 MB container image: a static musl binary on an empty base.
#
#   docker build -t tumbler .
#   docker run --rm -p 6379:6379 tumbler                       # like redis-server
#   docker run --rm -p 6379:6379 -e TUMBLER_ENABLE_TIME_CONTROL=yes tumbler
#   docker run --rm -p 6379:6379 tumbler --requirepass s3cret  # any --name value
#
# Every redis.conf directive works as `--name value` or as env TUMBLER_<NAME>
# (dashes as underscores). docs/clients.md shows CI service-container and Testcontainers use.

# Latest stable Rust: the lockfile may hold crates newer than the workspace MSRV.
FROM rust:1-slim-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends musl-tools \
 && rm -rf /var/lib/apt/lists/* \
 && rustup target add x86_64-unknown-linux-musl
WORKDIR /src
COPY . .
# mlua's vendored Lua is compiled by the cc crate with musl-gcc; the result is a static-pie
# executable with no runtime dependencies at all.
ENV CARGO_PROFILE_RELEASE_STRIP=true
RUN cargo build --release --locked -p tumbler --bin tumbler --target x86_64-unknown-linux-musl \
 && cp target/x86_64-unknown-linux-musl/release/tumbler /tumbler \
 && /tumbler --version

FROM scratch
COPY --from=build /tumbler /tumbler
# Listen on all interfaces inside the container (the host decides what to publish).
ENV TUMBLER_BIND=0.0.0.0
# Clients come from outside the container: protected mode (Redis 7: no password means
# loopback only) would refuse them all. The official Redis image does the same.
ENV TUMBLER_PROTECTED_MODE=no
# Non-root, numeric so it works without /etc/passwd (distroless' "nonroot").
USER 65532:65532
EXPOSE 6379
# No shell or redis-cli in the image: the binary pings itself.
HEALTHCHECK --interval=5s --timeout=3s --start-period=1s --retries=3 \
  CMD ["/tumbler", "--healthcheck"]
ENTRYPOINT ["/tumbler"]
